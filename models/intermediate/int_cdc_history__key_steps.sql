{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail'
    )
}}

{#
    Every row-level change event as steps of the version chains of the keys it touches:
    - `open` starts a version from a full image (insert, snapshot row, or the new key of a key change);
    - `update` overlays its image on the key's previous version: a column the image lacks keeps its value
      when the row still has the column (`row_columns`, the columns the message says the row has, or
      null when it does not say), so a whole row image replaces and a partial one fills in (cdc_history);
    - `delete` closes the key with its last known image (a delete, or the old key of a key change).
    A row of a table without a primary key is its own chain, keyed by its event; a key the deployment declares
    for its table (cdc_declared_primary_key) is its key instead of the vendor's.
    Stored, and appended to from the batches it has not read: keying an event parses its images, and an
    incremental run of cdc_history must not key every event again to find the few chains it touches.
#}
{%- set batch = cdc_batch() %}
with

row_events as (
    select
        events.event_id,
        events.source_format,
        events.source_name,
        events.source_task,
        events.source_time_zone,
        events.source_database,
        events.source_schema,
        events.source_table,
        events.op,
        events.before,
        events.after,
        events.row_columns,
        events.source_seq,
        events.event_order,
        events.row_index,
        events.kafka_partition,
        events.kafka_offset,
        events.event_ts,
        events.ingested_at,
        {{ cdc_declared_primary_key('events') }} as primary_key,
        concat('event:', events.event_id) as event_key
    from {{ ref('cdc_events') }} as events
    where events.op in ('c', 'u', 'd', 'r') and {{ cdc_in_batch(batch, 'events.cdc_batch_id') }}
),

keyed_events as (
    select
        row_events.*,
        {{ image_key('row_events.before', 'row_events.primary_key') }} as before_pk,
        {{ image_key('row_events.after', 'row_events.primary_key') }} as after_pk
    from row_events
),

classified_events as (
    select
        keyed_events.*,
        -- Only two known keys that differ change the key: an image lacking key columns continues its chain.
        coalesce(keyed_events.op = 'u' and keyed_events.before_pk != keyed_events.after_pk, false) as changes_key
    from keyed_events
),

-- An event's steps in one pass over the batch, no union (which would read and key its events twice): the
-- closing step of a delete or of a key change's old key, then the opening or update step of any other (a step
-- that does not apply is null, and left out).
steps as (
    select
        classified.*,
        event_step.pk,
        event_step.previous_pk,
        event_step.step_kind,
        event_step.image
    from classified_events as classified
        lateral view explode(array(
            if(
                classified.op = 'd' or classified.changes_key,
                named_struct(
                    'pk', coalesce(classified.before_pk, classified.after_pk, classified.event_key),
                    'previous_pk', cast(null as string),
                    'step_kind', 'delete',
                    'image', classified.before
                ),
                null
            ),
            if(
                classified.op != 'd',
                named_struct(
                    'pk', coalesce(classified.after_pk, classified.before_pk, classified.event_key),
                    'previous_pk', if(classified.changes_key, classified.before_pk, null),
                    'step_kind', if(classified.op = 'u' and not classified.changes_key, 'update', 'open'),
                    -- A key change opens the new key from the old row with the update applied.
                    'image', if(
                        classified.changes_key,
                        map_concat(
                            map_filter(
                                classified.before,
                                (column_name, column_value) -> not map_contains_key(classified.after, column_name)
                            ),
                            classified.after
                        ),
                        classified.after
                    )
                ),
                null
            )
        )) event_steps as event_step
    where event_step.step_kind is not null
){% if is_incremental() %},

    -- The stored steps of the window's events: few, so the anti-join below needs no shuffle of all steps.
    known_steps as (
        select /*+ broadcast(row_events) */ distinct steps_so_far.event_id
        from {{ this }} as steps_so_far
        left semi join row_events
            on steps_so_far.event_id = row_events.event_id
    )
{% endif %}

select
    {{ history_chain_id('steps') }} as chain_id,
    steps.source_format,
    steps.source_name,
    steps.source_task,
    steps.source_time_zone,
    steps.source_database,
    steps.source_schema,
    steps.source_table,
    steps.pk,
    steps.previous_pk,
    steps.step_kind,
    steps.image,
    steps.row_columns,
    steps.op,
    steps.event_id,
    steps.source_seq,
    steps.event_order,
    steps.row_index,
    steps.kafka_partition,
    steps.kafka_offset,
    steps.event_ts,
    steps.ingested_at,
    {{ cdc_batch_id(batch) }} as cdc_batch_id
from steps
{% if is_incremental() %}
    -- All steps of an event are appended together: an event already there has all of its steps.
    left anti join known_steps
        on steps.event_id = known_steps.event_id
{% endif %}
