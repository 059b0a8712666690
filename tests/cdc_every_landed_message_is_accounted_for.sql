{#
    Reconciliation: fails on every landed message that is in none of the places a message can go. A
    message is a change or control event (cdc_events), a change already known from another offset
    (cdc_redeliveries), a quarantined message (cdc_quarantine), a part of a reassembled Tencent DTS group,
    or a half of a paired Alibaba Cloud update. Two kinds of message are waiting, not lost: the parts of
    a DTS group at the end of its partition whose next parts have not landed, and Alibaba Cloud update
    halves whose partner has not landed (or, for halves without a sequence id, never will: they pair only
    with the message next to them). Which formats wait for what is in the registry (var cdc_formats,
    `waits_for`).
#}
{{ config(tags=['audit']) }}

{%- set grouped_staging = cdc_format_traits('staging', waits_for='envelope_group') -%}
{%- set paired_staging = cdc_format_traits('staging', waits_for='update_pair') -%}
{%- set paired_events = cdc_format_traits('events', waits_for='update_pair') -%}

with

landed as (
    select distinct
        raw_messages.topic,
        raw_messages.kafka_partition,
        raw_messages.kafka_offset
    from {{ source('landing', 'cdc_raw') }} as raw_messages
    {% if cdc_disabled_formats() %}
        -- Formats this deployment does not read (var cdc_enabled_formats) stay in landing.
        where raw_messages.source_format not in ('{{ cdc_disabled_formats() | join("', '") }}')
    {% endif %}
),

group_parts as (
    {% for staging_name in grouped_staging %}
        select
            entries.topic,
            entries.kafka_partition,
            explode(entries.part_offsets) as kafka_offset
        from {{ ref('stg_' ~ staging_name ~ '__entries') }} as entries
        {% if not loop.last %}union all{% endif %}
    {% else %}
        {{ no_kafka_positions() }}
    {% endfor %}
),

update_pairs as (
    {% for events_name in paired_events %}
        select
            pairs.topic,
            pairs.sequence_id,
            pairs.message_offsets
        from {{ ref('int_' ~ events_name ~ '__update_pairs') }} as pairs
        {% if not loop.last %}union all{% endif %}
    {% else %}
        select
            cast(null as string) as topic,
            cast(null as string) as sequence_id,
            cast(null as array<struct<kafka_partition: int, kafka_offset: bigint>>) as message_offsets
        where false
    {% endfor %}
),

staged_update_halves as (
    {% for staging_name in paired_staging %}
        select
            staged.topic,
            staged.kafka_partition,
            staged.kafka_offset,
            staged.sequence_id
        from {{ ref('stg_' ~ staging_name ~ '__messages') }} as staged
        where staged.quarantine_reason is null and staged.update_half is not null
        {% if not loop.last %}union all{% endif %}
    {% else %}
        select
            *,
            cast(null as string) as sequence_id
        from ({{ no_kafka_positions() }})
    {% endfor %}
),

-- The halves of each pair, and every half of a sequence id that has a pair: a replayed half of a paired
-- update carries nothing the pair's event does not have.
update_halves as (
    select
        update_pairs.topic,
        inline(update_pairs.message_offsets) as (kafka_partition, kafka_offset)
    from update_pairs
    union all
    select
        staged_update_halves.topic,
        staged_update_halves.kafka_partition,
        staged_update_halves.kafka_offset
    from staged_update_halves
    left semi join update_pairs
        on
            staged_update_halves.topic = update_pairs.topic
            and staged_update_halves.sequence_id = update_pairs.sequence_id
),

accounted as (
    select
        events.topic,
        events.kafka_partition,
        events.kafka_offset
    from {{ ref('cdc_events') }} as events
    union all
    select
        redeliveries.topic,
        redeliveries.kafka_partition,
        redeliveries.kafka_offset
    from {{ ref('cdc_redeliveries') }} as redeliveries
    union all
    select
        quarantined.topic,
        quarantined.kafka_partition,
        quarantined.kafka_offset
    from {{ ref('cdc_quarantine') }} as quarantined
    union all
    select
        group_parts.topic,
        group_parts.kafka_partition,
        group_parts.kafka_offset
    from group_parts
    union all
    select
        update_halves.topic,
        update_halves.kafka_partition,
        update_halves.kafka_offset
    from update_halves
),

last_settled_parts as (
    select
        group_parts.topic,
        group_parts.kafka_partition,
        max(group_parts.kafka_offset) as kafka_offset
    from group_parts
    group by group_parts.topic, group_parts.kafka_partition
),

waiting_parts as (
    {% for staging_name in grouped_staging %}
        select
            envelopes.topic,
            envelopes.kafka_partition,
            envelopes.kafka_offset
        from {{ ref('stg_' ~ staging_name ~ '__envelopes') }} as envelopes
        left join last_settled_parts
            on
                {{ same_partition('envelopes', 'last_settled_parts') }}
        where envelopes.kafka_offset > coalesce(last_settled_parts.kafka_offset, -1)
        {% if not loop.last %}union all{% endif %}
    {% else %}
        {{ no_kafka_positions() }}
    {% endfor %}
),

waiting_halves as (
    select
        staged_update_halves.topic,
        staged_update_halves.kafka_partition,
        staged_update_halves.kafka_offset
    from staged_update_halves
    left anti join update_halves
        on
            {{ same_message('staged_update_halves', 'update_halves') }}
),

explained as (
    select * from accounted
    union all
    select * from waiting_parts
    union all
    select * from waiting_halves
)

select
    landed.topic,
    landed.kafka_partition,
    landed.kafka_offset
from landed
left anti join explained
    on
        {{ same_message('landed', 'explained') }}
