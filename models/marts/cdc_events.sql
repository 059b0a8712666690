{{
    config(
        incremental_strategy='append',
        on_schema_change='fail'
    )
}}
{%- set batch = cdc_batch() %}

with

new_events as (
    select *
    from {{ ref('int_cdc_events__landed') }}
    where {{ cdc_in_batch(batch) }}
),

numbered_deliveries as (
    select
        new_events.*,
        -- Deliveries of one change at different offsets share the vendor's position: the first landed wins.
        row_number() over (
            partition by {{ source_change_identity('new_events') | join(', ') }}
            order by
                new_events.ingested_at, new_events.topic, new_events.kafka_partition, new_events.kafka_offset
        ) as delivery_number
    from new_events
),

first_deliveries as (
    select numbered_deliveries.*
    from numbered_deliveries
    where numbered_deliveries.source_position is null or numbered_deliveries.delivery_number = 1
){% if is_incremental() %},

-- The stored events a delivery of the batch can repeat, found by a semi join on the batch's keys: the
-- anti joins below then read these few rows, not the whole table. The keys are those of all the batch's
-- events (a superset of its first deliveries' keys, which leaves the anti joins' result as it is), so the
-- window above runs once.
known_events as (
    {{ stored_rows_sharing_keys(this, 'new_events', ['event_id'], ['event_id']) }}
),

known_changes as (
    {{ stored_rows_sharing_keys(this, 'new_events', ['source_position', 'source_format']) }}
)
{% endif %}

select
    {{ cdc_event_columns() | join(', ') }},
    {{ cdc_batch_id(batch) }} as cdc_batch_id
from first_deliveries
{% if is_incremental() %}
    -- A message landed again at its offset gives the same event ids as its first delivery.
    left anti join known_events
        on first_deliveries.event_id = known_events.event_id
    -- A change landed again at another offset repeats the position of a known event.
    left anti join known_changes
        on
            first_deliveries.source_position is not null
            {% for known_expression in source_change_identity('known_changes') -%}
                and {{ source_change_identity('first_deliveries')[loop.index0] }} <=> {{ known_expression }}
            {% endfor %}
{% endif %}
