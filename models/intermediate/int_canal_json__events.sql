{{ config(enabled=cdc_models_enabled(events='canal_json')) }}

{#
    One change event per row image of a Canal FlatMessage (one per DDL, truncate or control message).
    Canal puts inserted, updated (after) and deleted rows in `data` (Tencent CKafka's canal-compatible
    output a deleted row in `old`: stg_canal_json__messages.deleted_rows); an update's `old[i]` holds only
    the columns that changed (CKafka: all of them), so its before image is `data[i]` overlaid with `old[i]`.
#}
with

messages as (
    select *
    from {{ ref('stg_canal_json__messages') }}
    where quarantine_reason is null
),

row_images as (
    select
        messages.*,
        image.row_index,
        image.data_image
    from messages
        lateral view posexplode(
            case
                when messages.op = 'd' then messages.deleted_rows
                when messages.op in ('c', 'r', 'u') then messages.data_rows
                else array(cast(null as map <string, string>))
            end
        ) image as row_index, data_image
)

select
    row_images.source_format,
    row_images.topic,
    row_images.kafka_partition,
    row_images.kafka_offset,
    row_images.row_index,
    -- Canal reads MySQL binlogs (MariaDB and TiDB sources write the same shape; they are not told apart).
    'mysql' as source_db_type,
    row_images.source_database,
    cast(null as string) as source_schema,
    row_images.source_table,
    row_images.op,
    case
        when row_images.op = 'u'
            then {{ canal_binary_as_base64(
                canal_update_before_image('row_images.data_image', 'row_images.old_rows[row_images.row_index]'),
                'row_images.binary_columns'
            ) }}
        when row_images.op = 'd' then {{ canal_binary_as_base64('row_images.data_image', 'row_images.binary_columns') }}
    end as before,
    if(
        row_images.op in ('c', 'r', 'u'),
        {{ canal_binary_as_base64('row_images.data_image', 'row_images.binary_columns') }},
        null
    ) as after,
    row_images.column_types,
    -- mysqlType names every column of the table: `data` is the whole row.
    map_keys(row_images.column_types) as row_columns,
    row_images.primary_key,
    if(row_images.source_execute_ms > 0, timestamp_millis(row_images.source_execute_ms), null) as event_ts,
    row_images.canal_id as source_seq,
    -- The batch id is shared and restarts: within a partition the offset is Canal's binlog order.
    {{ event_order(['row_images.kafka_partition', 'row_images.kafka_offset', 'row_images.row_index']) }} as event_order,
    coalesce(row_images.gtid, cast(row_images.canal_id as string)) as source_position,
    row_images.ddl_sql,
    row_images.ingested_at,
    row_images.cdc_batch_id
from row_images
