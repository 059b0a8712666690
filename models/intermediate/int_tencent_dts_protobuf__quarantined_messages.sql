{{ config(enabled=cdc_models_enabled(events='tencent_dts_protobuf')) }}

-- Every message of a quarantined envelope group, with the group's reason and its own bytes.
with

quarantined_groups as (
    select *
    from {{ ref('stg_tencent_dts_protobuf__entries') }}
    where quarantine_reason is not null
)

select
    quarantined_groups.source_format,
    quarantined_groups.topic,
    quarantined_groups.kafka_partition,
    part.kafka_offset,
    quarantined_groups.ingested_at,
    quarantined_groups.cdc_batch_id,
    quarantined_groups.quarantine_reason,
    part.value as raw_value
from quarantined_groups
    lateral view explode(quarantined_groups.parts) group_parts as part
