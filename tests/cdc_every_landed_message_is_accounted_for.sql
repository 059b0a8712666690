{#
    Reconciliation: fails on every landed message that is in none of the places a message can go. A
    message is a change or control event (cdc_events), a change already known from another offset
    (cdc_redeliveries), a quarantined message (cdc_quarantine), a part of a reassembled Tencent DTS group,
    or a half of a paired Alibaba Cloud update. Two kinds of message are waiting, not lost: the parts of
    a DTS group at the end of its partition whose next parts have not landed, and Alibaba Cloud update
    halves whose partner has not landed (or, for halves without a sequence id, never will: they pair only
    with the message next to them).
#}

with

landed as (
    select distinct
        raw_messages.topic,
        raw_messages.kafka_partition,
        raw_messages.kafka_offset
    from {{ source('landing', 'cdc_raw') }} as raw_messages
),

dts_group_parts as (
    select
        entries.topic,
        entries.kafka_partition,
        explode(entries.part_offsets) as kafka_offset
    from {{ ref('stg_tencent_dts_protobuf__entries') }} as entries
),

{%- set aliyun_formats = [
    (ref('stg_aliyun_streamx_json__messages'), ref('int_aliyun_streamx_json__update_pairs')),
    (ref('stg_aliyun_datahub_tuple__messages'), ref('int_aliyun_datahub_tuple__update_pairs')),
] %}

-- The halves of each pair, and every half of a sequence id that has a pair: a replayed half of a paired
-- update carries nothing the pair's event does not have.
aliyun_update_halves as (
    {% for staging, pairs in aliyun_formats %}
        select
            pairs.topic,
            inline(pairs.message_offsets) as (kafka_partition, kafka_offset)
        from {{ pairs }} as pairs
        union all
        select
            staged.topic,
            staged.kafka_partition,
            staged.kafka_offset
        from {{ staging }} as staged
        left semi join {{ pairs }} as pairs
            on
                staged.topic = pairs.topic
                and staged.sequence_id = pairs.sequence_id
        where staged.quarantine_reason is null and staged.update_half is not null
        {% if not loop.last %}union all{% endif %}
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
        dts_group_parts.topic,
        dts_group_parts.kafka_partition,
        dts_group_parts.kafka_offset
    from dts_group_parts
    union all
    select
        aliyun_update_halves.topic,
        aliyun_update_halves.kafka_partition,
        aliyun_update_halves.kafka_offset
    from aliyun_update_halves
),

last_settled_dts_parts as (
    select
        dts_group_parts.topic,
        dts_group_parts.kafka_partition,
        max(dts_group_parts.kafka_offset) as kafka_offset
    from dts_group_parts
    group by dts_group_parts.topic, dts_group_parts.kafka_partition
),

waiting_dts_parts as (
    select
        envelopes.topic,
        envelopes.kafka_partition,
        envelopes.kafka_offset
    from {{ ref('stg_tencent_dts_protobuf__envelopes') }} as envelopes
    left join last_settled_dts_parts
        on
            envelopes.topic = last_settled_dts_parts.topic
            and envelopes.kafka_partition = last_settled_dts_parts.kafka_partition
    where envelopes.kafka_offset > coalesce(last_settled_dts_parts.kafka_offset, -1)
),

waiting_aliyun_halves as (
    {% for staging, pairs in aliyun_formats %}
        select
            staged.topic,
            staged.kafka_partition,
            staged.kafka_offset
        from {{ staging }} as staged
        left anti join aliyun_update_halves
            on
                staged.topic = aliyun_update_halves.topic
                and staged.kafka_partition = aliyun_update_halves.kafka_partition
                and staged.kafka_offset = aliyun_update_halves.kafka_offset
        where staged.quarantine_reason is null and staged.update_half is not null
        {% if not loop.last %}union all{% endif %}
    {% endfor %}
),

explained as (
    select * from accounted
    union all
    select * from waiting_dts_parts
    union all
    select * from waiting_aliyun_halves
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
