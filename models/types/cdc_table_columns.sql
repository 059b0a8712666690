{{
    config(
        materialized='incremental',
        incremental_strategy='merge',
        unique_key='table_column_key',
        on_schema_change='append_new_columns'
    )
}}

{#
    The typed columns of every source table: one row per (source_format, source_database,
    source_schema, source_table, column_name) seen in cdc_events.column_types, with the vendor type of
    its latest event (a DDL that changes a type wins from then on), the Spark type and parse rule of
    that type, and its position (order of first appearance, then name). Columns added by DDL appear
    when their first event does. The typed views' macros read it when a view is created: a table, so that
    lookup reads a few rows (the views it is built from take seconds to plan and run).
    A run retypes the columns of the source tables its batch's events carried types of, and every
    column when the type seeds changed since the stored rows were typed (cdc_type_seeds_version).
    `typing_changed_in_batch` is the batch that last changed how a column is typed (its name, Spark type,
    parse rule or position): a typed view is created again only when a column of its table changed so.
#}
{%- set batch = cdc_batch() %}
{%- set type_seeds_version = '' if batch.nothing_to_read else cdc_type_seeds_version() %}
{%- set stored = cdc_stored_typing(this) if is_incremental() and not batch.nothing_to_read else none %}
{%- set only_batch_tables = stored is not none and stored.has_typing_stamps
    and stored.type_seeds_version == type_seeds_version %}

with

observed_columns as (
    select observed.*
    from {{ ref('cdc_observed_column_types') }} as observed
    {%- if only_batch_tables %}
        -- The source tables whose column types this batch's events carried.
        left semi join (
            select distinct
                source_format,
                source_database,
                source_schema,
                source_table
            from {{ ref('cdc_observed_column_types') }}
            where {{ cdc_in_batch(batch) }}
        ) as batch_tables
            on
                observed.source_format = batch_tables.source_format
                and observed.source_database <=> batch_tables.source_database
                and observed.source_schema <=> batch_tables.source_schema
                and observed.source_table = batch_tables.source_table
    {%- endif %}
    where observed.source_table is not null
),

column_types as (
    select
        observed.source_format,
        observed.source_db_type,
        observed.source_database,
        observed.source_schema,
        observed.source_table,
        observed.column_name,
        observed.vendor_type_text,
        row_number() over (
            partition by
                observed.source_format, observed.source_database, observed.source_schema, observed.source_table,
                observed.column_name
            order by observed.last_event desc
        ) as recency,
        min(observed.first_event) over (
            partition by
                observed.source_format, observed.source_database, observed.source_schema, observed.source_table,
                observed.column_name
        ) as first_seen,
        max(observed.last_ingested_at) over (
            partition by
                observed.source_format, observed.source_database, observed.source_schema, observed.source_table,
                observed.column_name
        ) as last_seen_at
    from observed_columns as observed
),

latest_types as (
    select *
    from column_types
    where recency = 1
),

table_columns as (
    select
        sha2(to_json(array(
            latest_types.source_format, latest_types.source_database, latest_types.source_schema,
            latest_types.source_table, latest_types.column_name
        )), 256) as table_column_key,
        latest_types.source_format,
        latest_types.source_db_type,
        latest_types.source_database,
        latest_types.source_schema,
        latest_types.source_table,
        latest_types.column_name,
        row_number() over (
            partition by
                latest_types.source_format, latest_types.source_database, latest_types.source_schema,
                latest_types.source_table
            order by latest_types.first_seen, latest_types.column_name
        ) as column_position,
        latest_types.vendor_type_text,
        vendor_types.type_family,
        coalesce(vendor_types.spark_type, 'string') as spark_type,
        coalesce(vendor_types.parse_rule, 'cast') as parse_rule,
        vendor_types.parse_rule is not null as is_mapped,
        latest_types.last_seen_at,
        {{ cdc_sql_string(type_seeds_version) }} as type_seeds_version,
        {{ cdc_batch_id(batch) }} as cdc_batch_id
    from latest_types
    left join {{ ref('cdc_vendor_types') }} as vendor_types
        on
            latest_types.source_format = vendor_types.source_format
            and latest_types.source_db_type <=> vendor_types.source_db_type
            and latest_types.vendor_type_text = vendor_types.vendor_type_text
),

-- How each column was typed before: a column keeps the batch of its last typing change.
{%- if stored is not none and stored.has_typing_stamps %}
    stored_columns as (
        select * from {{ this }}
    )
{%- else %}
    stored_columns as (
        select
            table_column_key,
            column_name,
            spark_type,
            parse_rule,
            column_position,
            cast(null as bigint) as typing_changed_in_batch
        from table_columns
        where false
    )
{%- endif %}

select
    table_columns.*,
    if(
        stored_columns.column_name <=> table_columns.column_name
        and stored_columns.spark_type <=> table_columns.spark_type
        and stored_columns.parse_rule <=> table_columns.parse_rule
        and stored_columns.column_position <=> table_columns.column_position,
        stored_columns.typing_changed_in_batch,
        table_columns.cdc_batch_id
    ) as typing_changed_in_batch
from table_columns
left join stored_columns
    on table_columns.table_column_key = stored_columns.table_column_key
