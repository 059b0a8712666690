{{ config(enabled=cdc_models_enabled(events='tencent_dts_protobuf')) }}

{#
    One change event per row of a DML entry and one per control entry of every decoded Entries.
    The event's kafka_offset is the offset of the group's part 0; row_index runs over the whole group.
#}
with

entries as (
    select *
    from {{ ref('stg_tencent_dts_protobuf__entries') }}
    where quarantine_reason is null
),

operation_codes as (
    select
        vendor_operation,
        op
    from {{ ref('cdc_operation_codes') }}
    where source_format = 'tencent_dts_protobuf'
),

source_db_types as (
    select
        vendor_db_type,
        source_db_type
    from {{ ref('source_db_types') }}
),

events as (
    select
        entries.source_format,
        entries.topic,
        entries.kafka_partition,
        entries.kafka_offset,
        entries.ingested_at,
        entries.cdc_batch_id,
        dts.row_index,
        dts.event
    from entries
        lateral view posexplode(entries.events) dts as row_index, event
)

select
    events.source_format,
    events.topic,
    events.kafka_partition,
    events.kafka_offset,
    events.row_index,
    coalesce(source_db_types.source_db_type, lower(events.event.source_type)) as source_db_type,
    nullif(events.event.schema_name, '') as source_database,
    cast(null as string) as source_schema,
    nullif(events.event.table_name, '') as source_table,
    operation_codes.op,
    events.event.before,
    events.event.after,
    if(
        events.event.column_names is null,
        null,
        map_from_arrays(events.event.column_names, events.event.column_types)
    ) as column_types,
    -- The entry's column list is the table's: a row image lacking some of them (NA) is partial.
    events.event.column_names as row_columns,
    coalesce(events.event.key_columns, array()) as primary_key,
    if(events.event.timestamp > 0, timestamp_seconds(events.event.timestamp), null) as event_ts,
    cast(events.event.seq_id as decimal(38, 0)) as source_seq,
    {{ event_order(['events.event.seq_id', 'events.kafka_partition', 'events.kafka_offset', 'events.row_index']) }}
        as event_order,
    if(
        events.event.file_name != '',
        concat(events.event.file_name, ':', events.event.position),
        nullif(events.event.gtid, '')
    ) as source_position,
    events.event.ddl_sql,
    events.ingested_at,
    events.cdc_batch_id
from events
left join operation_codes
    on coalesce(events.event.dml_type, events.event.message_type) = operation_codes.vendor_operation
left join source_db_types
    on lower(events.event.source_type) = source_db_types.vendor_db_type
