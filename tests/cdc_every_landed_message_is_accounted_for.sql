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

{%- set grouped_formats = cdc_formats(waits_for='envelope_group') -%}
{%- set paired_formats = cdc_formats(waits_for='update_pair') -%}

with

landed as (
    select distinct
        raw_messages.topic,
        raw_messages.kafka_partition,
        raw_messages.kafka_offset
    from {{ source('landing', 'cdc_raw') }} as raw_messages
),

group_parts as (
    {% for source_format in grouped_formats %}
        select
            entries.topic,
            entries.kafka_partition,
            explode(entries.part_offsets) as kafka_offset
        from {{ ref('stg_' ~ source_format ~ '__entries') }} as entries
        {% if not loop.last %}union all{% endif %}
    {% else %}
        {{ no_kafka_positions() }}
    {% endfor %}
),

-- The halves of each pair, and every half of a sequence id that has a pair: a replayed half of a paired
-- update carries nothing the pair's event does not have.
update_halves as (
    {% for source_format in paired_formats %}
        select
            pairs.topic,
            inline(pairs.message_offsets) as (kafka_partition, kafka_offset)
        from {{ ref('int_' ~ source_format ~ '__update_pairs') }} as pairs
        union all
        select
            staged.topic,
            staged.kafka_partition,
            staged.kafka_offset
        from {{ ref('stg_' ~ source_format ~ '__messages') }} as staged
        left semi join {{ ref('int_' ~ source_format ~ '__update_pairs') }} as pairs
            on
                staged.topic = pairs.topic
                and staged.sequence_id = pairs.sequence_id
        where staged.quarantine_reason is null and staged.update_half is not null
        {% if not loop.last %}union all{% endif %}
    {% else %}
        {{ no_kafka_positions() }}
    {% endfor %}
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
    {% for source_format in grouped_formats %}
        select
            envelopes.topic,
            envelopes.kafka_partition,
            envelopes.kafka_offset
        from {{ ref('stg_' ~ source_format ~ '__envelopes') }} as envelopes
        left join last_settled_parts
            on
                envelopes.topic = last_settled_parts.topic
                and envelopes.kafka_partition = last_settled_parts.kafka_partition
        where envelopes.kafka_offset > coalesce(last_settled_parts.kafka_offset, -1)
        {% if not loop.last %}union all{% endif %}
    {% else %}
        {{ no_kafka_positions() }}
    {% endfor %}
),

waiting_halves as (
    {% for source_format in paired_formats %}
        select
            staged.topic,
            staged.kafka_partition,
            staged.kafka_offset
        from {{ ref('stg_' ~ source_format ~ '__messages') }} as staged
        left anti join update_halves
            on
                staged.topic = update_halves.topic
                and staged.kafka_partition = update_halves.kafka_partition
                and staged.kafka_offset = update_halves.kafka_offset
        where staged.quarantine_reason is null and staged.update_half is not null
        {% if not loop.last %}union all{% endif %}
    {% else %}
        {{ no_kafka_positions() }}
    {% endfor %}
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
        landed.topic = explained.topic
        and landed.kafka_partition = explained.kafka_partition
        and landed.kafka_offset = explained.kafka_offset
