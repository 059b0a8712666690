{#
    Reassembles split envelopes and decodes each complete Entries once. The vendor's consumer reads a
    partition in offset order: a part with index 0 starts a group, parts are appended until index is
    total - 1. A group whose parts are missing, repeated or out of order is quarantined whole, never
    half-decoded; the last group of a partition that is still incomplete waits for its next parts.

    Incremental: a run regroups each partition from its first message that no earlier run settled (the
    parts of a waiting group, new messages), or from the settled group before it, and appends the groups
    not settled before. A message that lands after the group it falls into was settled is quarantined on
    its own.
#}

with

all_envelopes as (
    select *
    from {{ ref('stg_tencent_dts_protobuf__envelopes') }}
),

{% if is_incremental() %}
    settled_offsets as (
        select
            settled.topic,
            settled.kafka_partition,
            part_offset as kafka_offset
        from {{ this }} as settled
            lateral view explode(settled.part_offsets) settled_parts as part_offset
    ),

    first_unsettled as (
        select
            unsettled.topic,
            unsettled.kafka_partition,
            min(unsettled.kafka_offset) as kafka_offset
        from all_envelopes as unsettled
        left anti join settled_offsets
            on
                unsettled.topic = settled_offsets.topic
                and unsettled.kafka_partition = settled_offsets.kafka_partition
                and unsettled.kafka_offset = settled_offsets.kafka_offset
        group by unsettled.topic, unsettled.kafka_partition
    ),

    resume_points as (
        -- Regrouping starts at the settled group the first unsettled message may belong to, if any.
        select
            first_unsettled.topic,
            first_unsettled.kafka_partition,
            coalesce(max(settled_groups.kafka_offset), first_unsettled.kafka_offset) as resume_offset
        from first_unsettled
        left join {{ this }} as settled_groups
            on
                first_unsettled.topic = settled_groups.topic
                and first_unsettled.kafka_partition = settled_groups.kafka_partition
                and settled_groups.kafka_offset < first_unsettled.kafka_offset
        group by first_unsettled.topic, first_unsettled.kafka_partition, first_unsettled.kafka_offset
    ),

    envelopes as (
        select /*+ broadcast(resume_points) */ all_envelopes.*
        from all_envelopes
        inner join resume_points
            on
                all_envelopes.topic = resume_points.topic
                and all_envelopes.kafka_partition = resume_points.kafka_partition
                and all_envelopes.kafka_offset >= resume_points.resume_offset
    ),
{% else %}
    envelopes as (
        select * from all_envelopes
    ),
{% endif %}

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

{% if is_incremental() %}
    settled_groups as (
        -- Each group's key marks whether an earlier run settled it already.
        select
            settled.*,
            known_groups.kafka_offset is not null as was_settled_before
        from settled
        left join (select distinct topic, kafka_partition, kafka_offset from {{ this }}) as known_groups
            on
                settled.topic = known_groups.topic
                and settled.kafka_partition = known_groups.kafka_partition
                and coalesce(settled.group_offset, settled.parts[0].kafka_offset) = known_groups.kafka_offset
    ),

    newly_settled as (
        select
            settled_groups.topic,
            settled_groups.kafka_partition,
            settled_groups.group_offset,
            settled_groups.parts,
            settled_groups.ingested_at,
            settled_groups.partition_last_offset,
            settled_groups.source_format,
            settled_groups.group_error,
            settled_groups.is_complete
        from settled_groups
        where not settled_groups.was_settled_before
    ),

    late_parts as (
        -- Parts of groups an earlier run settled (regrouped because the partition resumes before them)
        -- that the settled group did not have: each on its own, with the reason.
        select
            regrouped.topic,
            regrouped.kafka_partition,
            regrouped.part.kafka_offset as group_offset,
            array(regrouped.part) as parts,
            regrouped.ingested_at,
            regrouped.partition_last_offset,
            regrouped.source_format,
            'Envelope part landed after its group was settled' as group_error,
            false as is_complete
        from (
            select
                settled_groups.topic,
                settled_groups.kafka_partition,
                settled_groups.ingested_at,
                settled_groups.partition_last_offset,
                settled_groups.source_format,
                part
            from settled_groups
                lateral view explode(settled_groups.parts) regrouped_parts as part
            where settled_groups.was_settled_before
        ) as regrouped
        left anti join settled_offsets
            on
                regrouped.topic = settled_offsets.topic
                and regrouped.kafka_partition = settled_offsets.kafka_partition
                and regrouped.part.kafka_offset = settled_offsets.kafka_offset
    ),

    groups_to_decode as (
        select * from newly_settled
        union all
        select * from late_parts
    ),
{% else %}
    groups_to_decode as (
        select * from settled
    ),
{% endif %}

joined as (
    select
        groups_to_decode.*,
        if(
            groups_to_decode.group_error is null and groups_to_decode.is_complete,
            aggregate(groups_to_decode.parts, cast('' as binary), (data, part) -> concat(data, part.part_data)),
            null
        ) as entries_data
    from groups_to_decode
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
