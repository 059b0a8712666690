{{
    config(
        incremental_strategy='append'
    )
}}
{%- set batch = cdc_batch() %}

{#
    Change events that cdc_events did not take because an earlier landed message carried the same change
    (see source_change_identity), kept so every landed message stays accounted for.
    Built after the history's key steps, which it does not read: dbt starts the nodes of one depth in name
    order, and the history's chain (key steps, then cdc_history) is the run's longest.
#}
-- depends_on: {{ ref('int_cdc_history__key_steps') }}

with

landed_events as (
    select *
    from {{ ref('int_cdc_events__landed') }}
    where {{ cdc_in_batch(batch) }}
),

-- The events of the batch cdc_events took (or holds from before), found by a semi join on the batch's
-- event ids, so the anti joins below read a few rows, not whole tables.
taken_events as (
    {{ stored_rows_sharing_keys(ref('cdc_events'), 'landed_events', ['event_id'], ['event_id']) }}
){% if is_incremental() %},

known_redeliveries as (
    {{ stored_rows_sharing_keys(this, 'landed_events', ['event_id'], ['event_id']) }}
)
{% endif %}

select
    landed_events.event_id,
    landed_events.source_format,
    landed_events.source_name,
    landed_events.topic,
    landed_events.kafka_partition,
    landed_events.kafka_offset,
    landed_events.row_index,
    landed_events.source_table,
    landed_events.op,
    landed_events.source_seq,
    landed_events.source_position,
    landed_events.ingested_at,
    {{ cdc_batch_id(batch) }} as cdc_batch_id
from landed_events
left anti join taken_events
    on landed_events.event_id = taken_events.event_id
{% if is_incremental() %}
    left anti join known_redeliveries
        on landed_events.event_id = known_redeliveries.event_id
{% endif %}
