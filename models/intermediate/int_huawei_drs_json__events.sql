{#
    One change event per row image of a DRS JSON message (one per DDL message).
    DRS JSON puts a deleted row in `old`; an update's `old` holds its full before image.
#}
with

messages as (
    select *
    from {{ ref('stg_huawei_drs_json__messages') }}
    where quarantine_reason is null
),

source_db_types as (
    select
        vendor_db_type,
        source_db_type
    from {{ ref('source_db_types') }}
),

row_images as (
    select
        messages.*,
        image.row_index,
        image.primary_image
    from messages
        lateral view posexplode(
            case
                when messages.op = 'ddl' then array(cast(null as map <string, string>))
                when messages.op = 'd' then messages.old_rows
                else messages.data_rows
            end
        ) image as row_index, primary_image
)

select
    row_images.source_format,
    row_images.topic,
    row_images.kafka_partition,
    row_images.kafka_offset,
    row_images.row_index,
    -- The MySQL form names no database type.
    coalesce(source_db_types.source_db_type, row_images.vendor_db_type, 'mysql') as source_db_type,
    row_images.source_database,
    row_images.source_schema,
    row_images.source_table,
    row_images.op,
    case
        when row_images.op = 'u'
            then {{ huawei_drs_normalized_image('row_images.old_rows[row_images.row_index]', 'row_images.jdbc_types') }}
        when row_images.op = 'd'
            then {{ huawei_drs_normalized_image('row_images.primary_image', 'row_images.jdbc_types') }}
    end as before,
    case
        when row_images.op in ('c', 'r', 'u')
            then {{ huawei_drs_normalized_image('row_images.primary_image', 'row_images.jdbc_types') }}
    end as after,
    row_images.column_types,
    row_images.primary_key,
    if(row_images.source_commit_ms > 0, timestamp_millis(row_images.source_commit_ms), null) as event_ts,
    row_images.drs_id as source_seq,
    coalesce(row_images.drs_event_position, cast(row_images.drs_id as string)) as source_position,
    row_images.ddl_sql,
    row_images.ingested_at
from row_images
left join source_db_types
    on row_images.vendor_db_type = source_db_types.vendor_db_type
