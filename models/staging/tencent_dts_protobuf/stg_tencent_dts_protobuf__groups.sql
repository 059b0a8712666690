{{ config(enabled=cdc_models_enabled(staging='tencent_dts_protobuf')) }}

{#
    Reassembles split envelopes into groups, without their bytes (stg_tencent_dts_protobuf__entries joins
    and decodes them). The vendor's consumer reads a partition in order: a part with index 0 starts a
    group, parts are appended until index is total - 1. A group whose parts are missing, repeated or out of
    order is quarantined whole, never half-decoded; the last group of a partition that is still incomplete
    waits for its next parts.

    "The next part" is the next landed message of the partition, whatever its offset: offsets have gaps
    (a transactional producer's commit markers take offsets, compaction removes messages), so parts are
    placed by their rank among the partition's landed messages, never by offset arithmetic.

    Incremental: a run regroups only the partitions its batch landed messages in, each from its first
    message that no earlier run settled (the parts of a waiting group, new messages), or from the settled
    group before it, and appends the groups not settled before. A message that lands after the group it
    falls into was settled (in an offset gap of that group, too) is quarantined on its own. The stored
    groups and the envelopes are read through broadcast joins on the batch's partitions, for a largest
    settled offset per partition; the windows and the grouping run on the regrouped range only
    (docs/decisions.md, "DTS: reassembly follows the batch, decoding apart").
#}

{%- set batch = cdc_batch() %}
with

all_envelopes as (
    select *
    from {{ ref('stg_tencent_dts_protobuf__envelopes') }}
),

{% if is_incremental() %}
    batch_envelopes as (
        select *
        from all_envelopes
        where {{ cdc_in_batch(batch) }}
    ),

    batch_partitions as (
        select distinct
            batch_envelopes.topic,
            batch_envelopes.kafka_partition
        from batch_envelopes
    ),

    settled_groups as (
        -- The groups earlier runs settled in the batch's partitions: a semi join on them (Spark broadcasts
        -- the batch's partitions), so a run aggregates the groups of those partitions only.
        select
            settled.topic,
            settled.kafka_partition,
            settled.kafka_offset,
            array_max(settled.part_offsets) as last_part_offset
        from {{ this }} as settled
        left semi join batch_partitions
            on
                {{ same_partition('settled', 'batch_partitions') }}
    ),

    settled_up_to as (
        -- Earlier runs settle a partition's messages in offset order and leave only its last group waiting,
        -- so a message of an earlier batch was settled exactly when its offset is at most this one.
        select
            batch_partitions.topic,
            batch_partitions.kafka_partition,
            coalesce(max(settled_groups.last_part_offset), -1) as kafka_offset
        from batch_partitions
        left join settled_groups
            on
                {{ same_partition('batch_partitions', 'settled_groups') }}
        group by batch_partitions.topic, batch_partitions.kafka_partition
    ),

    partition_envelopes as (
        -- Every landed message of the batch's partitions, marked by whether an earlier run settled it.
        select /*+ broadcast(settled_up_to) */
            all_envelopes.*,
            not ({{ cdc_in_batch(batch, 'all_envelopes.cdc_batch_id') }})
            and all_envelopes.kafka_offset <= settled_up_to.kafka_offset as was_settled_before
        from all_envelopes
        inner join settled_up_to
            on
                {{ same_partition('all_envelopes', 'settled_up_to') }}
    ),

    first_unsettled as (
        select
            partition_envelopes.topic,
            partition_envelopes.kafka_partition,
            min(partition_envelopes.kafka_offset) as kafka_offset
        from partition_envelopes
        where not partition_envelopes.was_settled_before
        group by partition_envelopes.topic, partition_envelopes.kafka_partition
    ),

    resume_points as (
        -- Regrouping starts at the settled group the first unsettled message may belong to, if any.
        select
            first_unsettled.topic,
            first_unsettled.kafka_partition,
            coalesce(max(settled_groups.kafka_offset), first_unsettled.kafka_offset) as resume_offset
        from first_unsettled
        left join settled_groups
            on
                {{ same_partition('first_unsettled', 'settled_groups') }}
                and settled_groups.kafka_offset < first_unsettled.kafka_offset
        group by first_unsettled.topic, first_unsettled.kafka_partition, first_unsettled.kafka_offset
    ),

    envelopes as (
        -- The messages to regroup: the batch's partitions from their resume points on.
        select /*+ broadcast(resume_points) */ partition_envelopes.*
        from partition_envelopes
        inner join resume_points
            on
                {{ same_partition('partition_envelopes', 'resume_points') }}
                and partition_envelopes.kafka_offset >= resume_points.resume_offset
    ),
{% else %}
    envelopes as (
        select
            all_envelopes.*,
            false as was_settled_before
        from all_envelopes
    ),
{% endif %}

ranked as (
    -- Rank among the landed messages of the partition (of the regrouped range in an incremental run:
    -- only differences of ranks within a group are used).
    select
        envelopes.*,
        row_number() over (
            partition by envelopes.topic, envelopes.kafka_partition
            order by envelopes.kafka_offset
        ) as landed_rank
    from envelopes
),

part_zeros as (
    select
        ranked.*,
        -- Offset and rank grow together in a partition: the latest part 0 is the largest of both.
        max(
            if(
                ranked.part_index = 0 and ranked.envelope_error is null,
                struct(ranked.kafka_offset, ranked.landed_rank),
                null
            )
        ) over (
            partition by ranked.topic, ranked.kafka_partition
            order by ranked.kafka_offset
            rows between unbounded preceding and current row
        ) as latest_part_zero,
        max(ranked.landed_rank) over (
            partition by ranked.topic, ranked.kafka_partition
        ) as partition_last_rank
    from ranked
),

grouped as (
    select
        part_zeros.*,
        -- A message that is no envelope is a group of its own; any other belongs to the latest
        -- part 0 at or before it.
        if(part_zeros.envelope_error is not null, part_zeros.kafka_offset, part_zeros.latest_part_zero.kafka_offset)
            as group_offset,
        if(part_zeros.envelope_error is not null, part_zeros.landed_rank, part_zeros.latest_part_zero.landed_rank)
            as group_rank
    from part_zeros
),

groups as (
    select
        grouped.topic,
        grouped.kafka_partition,
        grouped.group_offset,
        sort_array(
            collect_list(
                named_struct(
                    'kafka_offset', grouped.kafka_offset,
                    'part_index', grouped.part_index,
                    'part_total', grouped.part_total,
                    'envelope_error', grouped.envelope_error
                )
            )
        ) as parts,
        -- Part i must be the i-th landed message after part 0, however far apart their offsets are.
        bool_and(grouped.part_index <=> grouped.landed_rank - grouped.group_rank) as parts_in_sequence,
        -- A message after the group's last part starts another group: this one has ended.
        max(grouped.landed_rank) < max(grouped.partition_last_rank) as later_group_started,
        bool_or(grouped.was_settled_before) as holds_settled_parts,
        collect_list(if(grouped.was_settled_before, null, grouped.kafka_offset)) as new_part_offsets,
        max(grouped.ingested_at) as ingested_at,
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
            when not groups.parts_in_sequence
                then 'Envelope parts repeated, missing or out of order'
            when size(groups.parts) > groups.parts[0].part_total
                then 'Envelope group has more parts than its total'
        end as group_error,
        size(groups.parts) = groups.parts[0].part_total as is_complete
    from groups
),

settled as (
    -- An incomplete group that no later group follows yet may still receive its next parts. A group
    -- holding messages an earlier run settled is decided already: its new messages are late parts.
    select checked.*
    from checked
    where
        checked.group_error is not null
        or checked.is_complete
        or checked.later_group_started
        or checked.holds_settled_parts
),

decided as (
    -- A group holding messages an earlier run settled was decided then: of it, each message no earlier
    -- run settled is a group of its own, quarantined (a late part; a part 0 landed in an offset gap of a
    -- settled group is one, and must not take that group's later parts). One pass, no union: the plan
    -- above runs once.
    select
        settled.source_format,
        settled.topic,
        settled.kafka_partition,
        settled.ingested_at,
        decided_group.group_offset,
        decided_group.parts,
        decided_group.group_error,
        decided_group.is_complete
    from settled
        lateral view explode(
            if(
                settled.holds_settled_parts,
                transform(
                    filter(settled.parts, part -> array_contains(settled.new_part_offsets, part.kafka_offset)),
                    part -> named_struct(
                        'group_offset', part.kafka_offset,
                        'parts', array(part),
                        'group_error', 'Envelope part landed after its group was settled',
                        'is_complete', false
                    )
                ),
                array(
                    named_struct(
                        'group_offset', settled.group_offset,
                        'parts', settled.parts,
                        'group_error', settled.group_error,
                        'is_complete', settled.is_complete
                    )
                )
            )
        ) decided_groups as decided_group
)

select
    decided.source_format,
    decided.topic,
    decided.kafka_partition,
    coalesce(decided.group_offset, decided.parts[0].kafka_offset) as kafka_offset,
    transform(decided.parts, part -> part.kafka_offset) as part_offsets,
    decided.ingested_at,
    {{ cdc_batch_id(batch) }} as cdc_batch_id,
    coalesce(
        decided.group_error,
        if(decided.is_complete, null, 'Envelope group ended before its last part')
    ) as group_error
from decided
