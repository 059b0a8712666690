{{ config(
    materialized='incremental',
    incremental_strategy='append',
    enabled=cdc_models_enabled(events='aliyun')
) }}
{%- set batch = cdc_batch() %}

{#
    The update halves of the Alibaba Cloud formats (update_half 'before' or 'after') paired into one
    row per before half, so the update event takes the before half's topic, partition and offset (its
    event_id) whatever else landed, in whichever run or partition its partner landed:
    - a half with a sequence id: every before half pairs with an after half of the same (topic,
      sequence_id): the one that follows it most closely in its partition, else the first in
      (kafka_partition, kafka_offset) order. A replayed before half is a pair of its own (the same change
      at another offset: cdc_events keeps the first, cdc_redeliveries the copy); a replayed after half
      adds no pair and is accounted for by its sequence id.
    - a half whose sequence id is unknown (null): it cannot pair by sequence id, which would pair the
      unrelated halves of other updates. A before half pairs only with the after half at the next offset
      of its partition when it is of the same table and event time, as the vendor writes an update's two
      halves one after the other.
    A half without its partner produces nothing and waits. The pair takes the later ingested_at of its two
    halves. Incremental: a run pairs again only the halves of sequence ids with a half staged in the
    batches it reads (unknown sequence ids: pairs with a half in them) and appends the pairs of before halves
    not paired before.
#}
with

all_halves as (
    select staged.*
    from {{ ref('int_aliyun__staged_changes') }} as staged
    where staged.update_half is not null
),

{% if is_incremental() %}
    touched_sequences as (
        select distinct
            all_halves.topic,
            all_halves.sequence_id
        from all_halves
        where
            all_halves.sequence_id is not null
            and {{ cdc_in_batch(batch, 'all_halves.cdc_batch_id') }}
    ),

    sequenced_halves as (
        select /*+ broadcast(touched_sequences) */ all_halves.*
        from all_halves
        left semi join touched_sequences
            on
                all_halves.topic = touched_sequences.topic
                and all_halves.sequence_id = touched_sequences.sequence_id
    ),
{% else %}
    sequenced_halves as (
        select all_halves.*
        from all_halves
        where all_halves.sequence_id is not null
    ),
{% endif %}

sequenced_candidates as (
    select
        struct(before_halves.*) as before_half,
        struct(after_halves.*) as after_half,
        row_number() over (
            partition by before_halves.topic, before_halves.kafka_partition, before_halves.kafka_offset
            order by
                case
                    when
                        after_halves.kafka_partition = before_halves.kafka_partition
                        and after_halves.kafka_offset > before_halves.kafka_offset
                        then 0
                    else 1
                end,
                after_halves.kafka_partition,
                after_halves.kafka_offset
        ) as preference
    from sequenced_halves as before_halves
    inner join sequenced_halves as after_halves
        on
            before_halves.topic = after_halves.topic
            and before_halves.sequence_id = after_halves.sequence_id
            and after_halves.update_half = 'after'
    where before_halves.update_half = 'before'
),

adjacent_pairs as (
    select
        struct(before_halves.*) as before_half,
        struct(after_halves.*) as after_half
    from all_halves as before_halves
    inner join all_halves as after_halves
        on
            {{ same_partition('before_halves', 'after_halves') }}
            and before_halves.kafka_offset + 1 = after_halves.kafka_offset
            and after_halves.update_half = 'after'
            and after_halves.sequence_id is null
            and before_halves.source_database <=> after_halves.source_database
            and before_halves.source_schema <=> after_halves.source_schema
            and before_halves.source_table = after_halves.source_table
            and before_halves.event_ts <=> after_halves.event_ts
    where
        before_halves.update_half = 'before'
        and before_halves.sequence_id is null
    {% if is_incremental() %}
            and (
                {{ cdc_in_batch(batch, 'before_halves.cdc_batch_id') }}
                or {{ cdc_in_batch(batch, 'after_halves.cdc_batch_id') }}
            )
        {% endif %}
),

pairs as (
    select
        sequenced_candidates.before_half,
        sequenced_candidates.after_half
    from sequenced_candidates
    where sequenced_candidates.preference = 1
    union all
    select
        adjacent_pairs.before_half,
        adjacent_pairs.after_half
    from adjacent_pairs
)

select
    pairs.before_half.source_format,
    pairs.before_half.topic,
    pairs.before_half.kafka_partition,
    pairs.before_half.kafka_offset,
    pairs.before_half.sequence_id,
    pairs.after_half.vendor_db_type,
    pairs.after_half.source_database,
    pairs.after_half.source_schema,
    pairs.after_half.source_table,
    pairs.before_half.before_image,
    pairs.after_half.after_image,
    coalesce(pairs.after_half.column_types, pairs.before_half.column_types) as column_types,
    pairs.after_half.primary_key,
    coalesce(pairs.after_half.event_ts, pairs.before_half.event_ts) as event_ts,
    coalesce(pairs.after_half.source_position, pairs.before_half.source_position) as source_position,
    greatest(pairs.before_half.ingested_at, pairs.after_half.ingested_at) as ingested_at,
    {{ cdc_batch_id(batch) }} as cdc_batch_id,
    -- The landed messages this update is made of: the before half, then the after half.
    array(
        named_struct(
            'kafka_partition', pairs.before_half.kafka_partition,
            'kafka_offset', pairs.before_half.kafka_offset
        ),
        named_struct(
            'kafka_partition', pairs.after_half.kafka_partition,
            'kafka_offset', pairs.after_half.kafka_offset
        )
    ) as message_offsets
from pairs
{% if is_incremental() %}
    left anti join {{ this }} as known_pairs
        on
            {{ same_message('pairs.before_half', 'known_pairs') }}
{% endif %}
