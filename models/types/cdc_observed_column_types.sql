{{
    config(
        materialized='incremental',
        incremental_strategy='merge',
        unique_key='column_type_key'
    )
}}

{#
    Every vendor type each source column has carried: one row per (source_format, source_db_type,
    source_database, source_schema, source_table, column_name, vendor_type_text) of cdc_events.column_types,
    with the first and the last event that carried it (in the table's event order) and when it last landed.
    A run explodes the column types of its batch's events only and merges them into the rows they touch:
    first and last are a min and a max, so merging a batch twice (again after a crashed run) changes
    nothing. cdc_vendor_types resolves the types against the seeds when it is read; cdc_table_columns
    retypes every column when the seeds change.
#}
{%- set batch = cdc_batch() %}

with

batch_column_types as (
    select
        events.source_format,
        events.source_db_type,
        events.source_database,
        events.source_schema,
        events.source_table,
        column_type.column_name,
        column_type.vendor_type_text,
        min(struct(events.source_task, events.event_order, events.event_id)) as first_event,
        max(struct(events.source_task, events.event_order, events.event_id)) as last_event,
        max(events.ingested_at) as last_ingested_at
    from {{ ref('cdc_events') }} as events
        lateral view explode(events.column_types) column_type as column_name, vendor_type_text
    where {{ cdc_in_batch(batch, 'events.cdc_batch_id') }}
    group by
        events.source_format,
        events.source_db_type,
        events.source_database,
        events.source_schema,
        events.source_table,
        column_type.column_name,
        column_type.vendor_type_text
),

keyed_batch_column_types as (
    select
        -- The grain's columns may be null (a format without databases or schemas): one key column merges.
        sha2(to_json(array(
            source_format, source_db_type, source_database, source_schema, source_table, column_name,
            vendor_type_text
        )), 256) as column_type_key,
        *
    from batch_column_types
){% if is_incremental() %},

stored_column_types as (
    {{ stored_rows_sharing_keys(this, 'keyed_batch_column_types', ['column_type_key']) }}
){% endif %}

select
    batch_types.column_type_key,
    batch_types.source_format,
    batch_types.source_db_type,
    batch_types.source_database,
    batch_types.source_schema,
    batch_types.source_table,
    batch_types.column_name,
    batch_types.vendor_type_text,
    {% if is_incremental() -%}
        least(batch_types.first_event, stored_types.first_event) as first_event,
        greatest(batch_types.last_event, stored_types.last_event) as last_event,
        greatest(batch_types.last_ingested_at, stored_types.last_ingested_at) as last_ingested_at,
    {%- else -%}
        batch_types.first_event,
        batch_types.last_event,
        batch_types.last_ingested_at,
    {%- endif %}
    {{ cdc_batch_id(batch) }} as cdc_batch_id
from keyed_batch_column_types as batch_types
{%- if is_incremental() %}
    left join stored_column_types as stored_types
        on batch_types.column_type_key = stored_types.column_type_key
{%- endif %}
