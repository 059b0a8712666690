{{ config(materialized='table') }}

{#
    Reassembles split envelopes and decodes each complete Entries once. The vendor's consumer reads a
    partition in offset order: a part with index 0 starts a group, parts are appended until index is
    total - 1. A group whose parts are missing, repeated or out of order is quarantined whole, never
    half-decoded; the last group of a partition that is still incomplete waits for its next parts.
#}

with

envelopes as (
    select *
    from {{ ref('stg_tencent_dts_protobuf__envelopes') }}
),

grouped as (
    select
        envelopes.*,
        -- A message that is no envelope is a group of its own; any other belongs to the latest
        -- part 0 at or before it.
        if(
            envelopes.envelope_error is not null,
            envelopes.kafka_offset,
            max(if(envelopes.part_index = 0 and envelopes.envelope_error is null, envelopes.kafka_offset, null)) over (
                partition by envelopes.topic, envelopes.kafka_partition
                order by envelopes.kafka_offset
                rows between unbounded preceding and current row
            )
        ) as group_offset,
        max(envelopes.kafka_offset) over (
            partition by envelopes.topic, envelopes.kafka_partition
        ) as partition_last_offset
    from envelopes
),

groups as (
    select
        grouped.topic,
        grouped.kafka_partition,
        grouped.group_offset,
        array_sort(
            collect_list(
                named_struct(
                    'kafka_offset', grouped.kafka_offset,
                    'part_index', grouped.part_index,
                    'part_total', grouped.part_total,
                    'part_data', grouped.part_data,
                    'envelope_error', grouped.envelope_error,
                    'value', grouped.value
                )
            )
        ) as parts,
        max(grouped.ingested_at) as ingested_at,
        max(grouped.partition_last_offset) as partition_last_offset,
        first(grouped.source_format) as source_format
    from grouped
    group by grouped.topic, grouped.kafka_partition, grouped.group_offset
),

checked as (
    select
        groups.*,
        case
            when exists(groups.parts, part -> part.envelope_error is not null)
                then filter(groups.parts, part -> part.envelope_error is not null)[0].envelope_error
            when groups.group_offset is null
                then 'Envelope part without a part 0 before it in its partition'
            when exists(groups.parts, part -> part.part_total != groups.parts[0].part_total)
                then 'Envelope parts of one group disagree on total'
            when not forall(
                    groups.parts,
                    part -> part.part_index = part.kafka_offset - groups.group_offset
                )
                then 'Envelope parts repeated, missing or out of order'
            when size(groups.parts) > groups.parts[0].part_total
                then 'Envelope group has more parts than its total'
        end as group_error,
        size(groups.parts) = groups.parts[0].part_total as is_complete
    from groups
),

settled as (
    -- An incomplete group at the end of its partition may still receive its next parts.
    select checked.*
    from checked
    where
        checked.group_error is not null
        or checked.is_complete
        or checked.group_offset + checked.parts[0].part_total - 1 <= checked.partition_last_offset
),

joined as (
    select
        settled.*,
        if(
            settled.group_error is null and settled.is_complete,
            aggregate(settled.parts, cast('' as binary), (data, part) -> concat(data, part.part_data)),
            null
        ) as entries_data
    from settled
),

decoded as (
    select
        joined.*,
        -- Only complete, valid groups carry data; the UDF sees null for the rest.
        cdc_dts_decode(joined.entries_data) as entries
    from joined
)

select
    decoded.source_format,
    decoded.topic,
    decoded.kafka_partition,
    coalesce(decoded.group_offset, decoded.parts[0].kafka_offset) as kafka_offset,
    transform(decoded.parts, part -> part.kafka_offset) as part_offsets,
    decoded.ingested_at,
    decoded.entries.events,
    coalesce(
        decoded.group_error,
        if(decoded.is_complete, null, 'Envelope group ended before its last part'),
        decoded.entries.error,
        concat(
            'unknown message or DML type: ',
            filter(
                decoded.entries.events,
                event -> event.message_type like 'UNKNOWN%' or event.dml_type like 'UNKNOWN%'
            )[0].message_type
        )
    ) as quarantine_reason,
    decoded.parts
from decoded
