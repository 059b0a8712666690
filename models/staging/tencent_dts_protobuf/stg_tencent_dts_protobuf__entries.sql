{{ config(enabled=cdc_models_enabled(staging='tencent_dts_protobuf')) }}

{#
    Decodes each envelope group of the batch once: the parts of a group that
    stg_tencent_dts_protobuf__groups settled without an error are joined in order into the serialized
    Entries and decoded; a group with an error keeps its parts' bytes for the quarantine.

    Incremental: a run reads the groups of its batch (cdc_in_batch) and their parts' envelopes, through a
    broadcast join on the batch's parts. A group decoded before is not decoded again: the groups were
    regrouped from scratch while this table was kept (a first build of the groups model on a warehouse of an
    older version, or a full refresh of it alone).
#}

{%- set batch = cdc_batch() %}
with

batch_groups as (
    select *
    from {{ ref('stg_tencent_dts_protobuf__groups') }}
    where {{ cdc_in_batch(batch) }}
),

{% if is_incremental() %}
    decoded_before as (
        select
            stored.topic,
            stored.kafka_partition,
            stored.kafka_offset
        from {{ this }} as stored
        left semi join batch_groups
            on
                {{ same_message('stored', 'batch_groups') }}
    ),

    new_groups as (
        select batch_groups.*
        from batch_groups
        left anti join decoded_before
            on
                {{ same_message('batch_groups', 'decoded_before') }}
    ),
{% else %}
    new_groups as (
        select *
        from batch_groups
    ),
{% endif %}

group_parts as (
    select
        new_groups.topic,
        new_groups.kafka_partition,
        new_groups.kafka_offset as group_offset,
        group_part.part_position,
        group_part.kafka_offset
    from new_groups
        lateral view posexplode(new_groups.part_offsets) group_part as part_position, kafka_offset
),

parts as (
    select {% if is_incremental() %}/*+ broadcast(group_parts) */{% endif %}
        group_parts.topic,
        group_parts.kafka_partition,
        group_parts.group_offset,
        -- Sorted by the part's place in its group first: sort_array then joins them in order.
        sort_array(
            collect_list(
                named_struct(
                    'part_position', group_parts.part_position,
                    'kafka_offset', envelopes.kafka_offset,
                    'part_data', envelopes.part_data,
                    'value', envelopes.value
                )
            )
        ) as parts
    from group_parts
    inner join {{ ref('stg_tencent_dts_protobuf__envelopes') }} as envelopes
        on
            {{ same_message('group_parts', 'envelopes') }}
    group by group_parts.topic, group_parts.kafka_partition, group_parts.group_offset
),

joined as (
    select
        new_groups.*,
        parts.parts,
        if(
            new_groups.group_error is null,
            aggregate(parts.parts, cast('' as binary), (data, part) -> concat(data, part.part_data)),
            null
        ) as entries_data
    from new_groups
    inner join parts
        on
            new_groups.topic = parts.topic
            and new_groups.kafka_partition = parts.kafka_partition
            and new_groups.kafka_offset = parts.group_offset
),

decoded as (
    select
        joined.*,
        -- Only valid groups carry data; the UDF sees null for the rest.
        cdc_dts_decode(joined.entries_data) as entries
    from joined
),

reasoned as (
    select
        decoded.source_format,
        decoded.topic,
        decoded.kafka_partition,
        decoded.kafka_offset,
        decoded.part_offsets,
        decoded.ingested_at,
        {{ cdc_batch_id(batch) }} as cdc_batch_id,
        decoded.entries.events,
        coalesce(
            decoded.group_error,
            decoded.entries.error,
            concat(
                'unknown message or DML type: ',
                filter(
                    decoded.entries.events,
                    event -> event.message_type like 'UNKNOWN%' or event.dml_type like 'UNKNOWN%'
                )[0].message_type
            ),
            -- DTS numbers every entry; a change without its number (0: absent) has no place in the order.
            if(
                exists(decoded.entries.events, event -> event.message_type in ('DML', 'DDL') and event.seq_id = '0'),
                'DML or DDL entry without a sequence number (seqId)',
                null
            )
        ) as quarantine_reason,
        decoded.parts
    from decoded
)

select
    reasoned.source_format,
    reasoned.topic,
    reasoned.kafka_partition,
    reasoned.kafka_offset,
    reasoned.part_offsets,
    reasoned.ingested_at,
    reasoned.cdc_batch_id,
    reasoned.events,
    reasoned.quarantine_reason,
    -- The parts' bytes are kept for the quarantine only: a decoded group's bytes are in landing.
    if(
        reasoned.quarantine_reason is null,
        null,
        transform(reasoned.parts, part -> named_struct('kafka_offset', part.kafka_offset, 'value', part.value))
    ) as parts
from reasoned
