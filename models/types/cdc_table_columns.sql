{#
    The typed columns of every source table: one row per (source_format, source_database,
    source_schema, source_table, column_name) seen in cdc_events.column_types, with the vendor type of
    its latest event (a DDL that changes a type wins from then on), the Spark type and parse rule of
    that type, and its position (order of first appearance, then name). Columns added by DDL appear
    when their first event does. The typed-table macros read it at compile time.
#}
with

column_events as (
    select
        events.source_format,
        events.source_db_type,
        events.source_database,
        events.source_schema,
        events.source_table,
        column_type.column_name,
        column_type.vendor_type_text,
        events.ingested_at,
        row_number() over (
            partition by
                events.source_format, events.source_database, events.source_schema, events.source_table,
                column_type.column_name
            order by events.event_order desc, events.event_id desc
        ) as recency,
        min(struct(events.event_order, events.event_id)) over (
            partition by
                events.source_format, events.source_database, events.source_schema, events.source_table,
                column_type.column_name
        ) as first_seen,
        max(events.ingested_at) over (
            partition by
                events.source_format, events.source_database, events.source_schema, events.source_table,
                column_type.column_name
        ) as last_seen_at
    from {{ ref('cdc_events') }} as events
        lateral view explode(events.column_types) column_type as column_name, vendor_type_text
    where events.source_table is not null
),

latest_types as (
    select *
    from column_events
    where recency = 1
)

select
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
    latest_types.last_seen_at
from latest_types
left join {{ ref('cdc_vendor_types') }} as vendor_types
    on
        latest_types.source_format = vendor_types.source_format
        and latest_types.source_db_type <=> vendor_types.source_db_type
        and latest_types.vendor_type_text = vendor_types.vendor_type_text
