{{ config(enabled=cdc_models_enabled(events='huawei_drs')) }}

{#
    Change events of the DRS JSON-shaped formats, in the cdc_events shape without event_id: one per row
    image of a message (`row_index` = its position in `data` / `old`), one per DDL message. A delete's
    rows are where its form carries them (stg_huawei_drs__messages.deleted_rows); an update's `old` holds
    its full before image.
#}

with

messages as (
    select *
    from {{ ref('stg_huawei_drs__messages') }}
    where quarantine_reason is null
),

source_db_types as (
    select
        vendor_db_type,
        source_db_type
    from {{ ref('source_db_types') }}
),

binary_column_types as (
    select
        map_from_entries(collect_list(struct(
            concat(source_db_type, ':', column_type), value_encoding
        ))) as encoding_by_db_and_type
    from {{ ref('huawei_drs_binary_column_types') }}
),

typed_messages as (
    select
        messages.*,
        -- The MySQL form names no database type.
        coalesce(source_db_types.source_db_type, messages.vendor_db_type, 'mysql') as source_db_type,
        binary_column_types.encoding_by_db_and_type
    from messages
    left join source_db_types
        on messages.vendor_db_type = source_db_types.vendor_db_type
    cross join binary_column_types
),

encoded_messages as (
    select
        typed_messages.*,
        transform_values(
            typed_messages.column_types,
            (column_name, column_type) -> typed_messages.encoding_by_db_and_type[
                concat(typed_messages.source_db_type, ':', lower(trim(column_type)))
            ]
        ) as binary_encodings
    from typed_messages
),

row_images as (
    select
        encoded_messages.*,
        image.row_index,
        image.primary_image
    from encoded_messages
        lateral view posexplode(
            case
                when encoded_messages.op = 'ddl' then array(cast(null as map <string, string>))
                when encoded_messages.op = 'd' then encoded_messages.deleted_rows
                else encoded_messages.data_rows
            end
        ) image as row_index, primary_image
)

select
    row_images.source_format,
    row_images.topic,
    row_images.kafka_partition,
    row_images.kafka_offset,
    row_images.row_index,
    row_images.source_db_type,
    row_images.source_database,
    row_images.source_schema,
    row_images.source_table,
    row_images.op,
    case
        when row_images.op = 'u'
            then {{ huawei_drs_normalized_image(
                'row_images.old_rows[row_images.row_index]', 'row_images.jdbc_types', 'row_images.binary_encodings'
            ) }}
        when row_images.op = 'd'
            then {{ huawei_drs_normalized_image(
                'row_images.primary_image', 'row_images.jdbc_types', 'row_images.binary_encodings'
            ) }}
    end as before,
    case
        when row_images.op in ('c', 'r', 'u')
            then {{ huawei_drs_normalized_image(
                'row_images.primary_image', 'row_images.jdbc_types', 'row_images.binary_encodings'
            ) }}
    end as after,
    row_images.column_types,
    -- mysqlType (columnType) names every column of the table: an image is the row.
    map_keys(row_images.column_types) as row_columns,
    row_images.primary_key,
    if(
        row_images.source_commit_ms > 0
        and not array_contains({{ huawei_drs_es_not_change_time_db_types() }}, row_images.source_db_type),
        timestamp_millis(row_images.source_commit_ms),
        null
    ) as event_ts,
    row_images.drs_id as source_seq,
    {{ event_order([
        'row_images.drs_id', 'row_images.row_index', 'row_images.kafka_partition', 'row_images.kafka_offset'
    ]) }} as event_order,
    coalesce(row_images.drs_event_position, cast(row_images.drs_id as string)) as source_position,
    row_images.ddl_sql,
    row_images.ingested_at,
    row_images.cdc_batch_id
from row_images
