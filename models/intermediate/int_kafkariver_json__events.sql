{{ config(enabled=cdc_models_enabled(events='kafkariver_json')) }}

{#
    One change event per KafkaRiver message (one row per message). A column's value is null when its
    `null` flag is set; an update's before value is `origin_val` for columns flagged `updated` (absent
    origin_val: the old value was NULL), else the unchanged `v`.
#}
with

messages as (
    select *
    from {{ ref('stg_kafkariver_json__messages') }}
    where quarantine_reason is null
),

images as (
    select
        messages.*,
        map_from_entries(transform(
            messages.row_columns,
            column_value -> struct(column_value.n, if(column_value.`null`, null, column_value.v))
        )) as current_image,
        map_from_entries(transform(
            messages.row_columns,
            column_value -> struct(
                column_value.n,
                if(
                    coalesce(column_value.updated, false),
                    column_value.origin_val,
                    if(column_value.`null`, null, column_value.v)
                )
            )
        )) as previous_image,
        map_from_entries(transform(
            messages.row_columns, column_value -> struct(column_value.n, column_value.t)
        )) as vendor_column_types
    from messages
)

select
    images.source_format,
    images.topic,
    images.kafka_partition,
    images.kafka_offset,
    0 as row_index,
    'mysql' as source_db_type,
    images.source_database,
    cast(null as string) as source_schema,
    images.source_table,
    images.op,
    case
        when images.op = 'u' then images.previous_image
        when images.op = 'd' then images.current_image
    end as before,
    if(images.op in ('c', 'u'), images.current_image, null) as after,
    images.vendor_column_types as column_types,
    -- A message lists every column of its row.
    map_keys(images.vendor_column_types) as row_columns,
    images.primary_key,
    if(images.source_event_ms > 0, timestamp_millis(images.source_event_ms), null) as event_ts,
    images.binlog_seq as source_seq,
    {{ event_order(['images.binlog_seq', 'images.kafka_partition', 'images.kafka_offset']) }} as event_order,
    images.binlog_position as source_position,
    cast(null as string) as ddl_sql,
    images.ingested_at,
    images.cdc_batch_id
from images
