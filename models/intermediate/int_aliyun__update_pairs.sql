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

-- Halves that may pair share a pairing key: those of a known sequence id that id; of an unknown one, the
-- partition and the before half's offset (the after half's, less one).
all_halves as (
    select
        staged.*,
        if(staged.sequence_id is null, staged.kafka_partition, null) as pairing_partition,
        if(
            staged.sequence_id is null,
            staged.kafka_offset - if(staged.update_half = 'after', 1, 0),
            null
        ) as pairing_offset
    from {{ ref('int_aliyun__staged_changes') }} as staged
    where staged.update_half is not null
),

{% if is_incremental() %}
    touched_keys as (
        select distinct
            all_halves.topic,
            all_halves.sequence_id,
            all_halves.pairing_partition,
            all_halves.pairing_offset
        from all_halves
        where {{ cdc_in_batch(batch, 'all_halves.cdc_batch_id') }}
    ),

    pairable_halves as (
        select /*+ broadcast(touched_keys) */ all_halves.*
        from all_halves
        left semi join touched_keys
            on
                all_halves.topic = touched_keys.topic
                and all_halves.sequence_id <=> touched_keys.sequence_id
                and all_halves.pairing_partition <=> touched_keys.pairing_partition
                and all_halves.pairing_offset <=> touched_keys.pairing_offset
    ),
{% else %}
    pairable_halves as (
        select all_halves.*
        from all_halves
    ),
{% endif %}

-- Each half with the after halves of its pairing key: one read of the halves, no self join.
halves_with_after_halves as (
    select
        pairable_halves.update_half,
        struct(pairable_halves.*) as half,
        collect_list(if(pairable_halves.update_half = 'after', struct(pairable_halves.*), null)) over (
            partition by
                pairable_halves.topic,
                pairable_halves.sequence_id,
                pairable_halves.pairing_partition,
                pairable_halves.pairing_offset
        ) as after_halves
    from pairable_halves
),

-- A before half's partners: any after half of its sequence id; of an unknown one, the next offset's if it
-- is of the same table and event time.
partners as (
    select
        halves.half as before_half,
        filter(
            halves.after_halves,
            after_half -> halves.half.sequence_id is not null or (
                halves.half.source_database <=> after_half.source_database
                and halves.half.source_schema <=> after_half.source_schema
                and halves.half.source_table = after_half.source_table
                and halves.half.event_ts <=> after_half.event_ts
            )
        ) as after_halves
    from halves_with_after_halves as halves
    where halves.update_half = 'before'
),

-- The partner that follows the before half most closely in its partition, else the first in
-- (kafka_partition, kafka_offset) order.
preferred_partners as (
    select
        partners.before_half,
        partners.after_halves,
        array_min(transform(
            partners.after_halves,
            after_half -> struct(
                if(
                    after_half.kafka_partition = partners.before_half.kafka_partition
                    and after_half.kafka_offset > partners.before_half.kafka_offset,
                    0,
                    1
                ) as preference,
                after_half.kafka_partition,
                after_half.kafka_offset
            )
        )) as preferred
    from partners
    where size(partners.after_halves) > 0
),

pairs as (
    select
        preferred_partners.before_half,
        element_at(
            filter(
                preferred_partners.after_halves,
                after_half -> after_half.kafka_partition = preferred_partners.preferred.kafka_partition
                and after_half.kafka_offset = preferred_partners.preferred.kafka_offset
            ),
            1
        ) as after_half
    from preferred_partners
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
