{#
    The message shape shared by Huawei DRS JSON and JSON-C: the MySQL form (mysqlType) and the
    Oracle / PostgreSQL / GaussDB / SQL Server form (columnType, dbType, schema, opType).
    A message that does not fit lands in _corrupt_record and is quarantined.
#}
{% macro huawei_drs_json_schema() -%}
    struct<
        id: decimal(38, 0),
        es: bigint,
        ts: bigint,
        dbType: string,
        database: string,
        schema: string,
        table: string,
        type: string,
        opType: string,
        isDdl: boolean,
        sql: string,
        mysqlType: map<string, string>,
        columnType: map<string, string>,
        sqlType: map<string, int>,
        data: array<map<string, string>>,
        old: array<map<string, string>>,
        pkNames: array<string>,
        eventId: string,
        _corrupt_record: string
    >
{%- endmacro %}


{#
    java.sql.Types codes whose values the MySQL form writes as Java byte lists: BINARY, VARBINARY,
    LONGVARBINARY, BLOB. (The columnType form's sqlType codes are not java.sql.Types: its binary
    columns are named by type in the huawei_drs_binary_column_types seed.)
#}
{% macro huawei_drs_binary_jdbc_types() -%}
    array(-2, -3, -4, 2004)
{%- endmacro %}


{#
    Canonical source_db_type values whose DRS `es` is not the commit time of the change itself:
    for PostgreSQL the vendor defines `es` as the commit time of the record's previous transaction,
    so event_ts is left null (unknown) rather than set to an earlier time.
#}
{% macro huawei_drs_es_not_change_time_db_types() -%}
    array('postgresql')
{%- endmacro %}


{#
    A row image with binary values as base64: Java byte lists of the MySQL form (by JDBC code),
    and values of the columns `binary_encodings` names (column -> encoding, from the
    huawei_drs_binary_column_types seed), e.g. PostgreSQL / GaussDB bytea hex text.
#}
{% macro huawei_drs_normalized_image(image, jdbc_types, binary_encodings) %}
    transform_values(
        {{ image }},
        (column_name, column_value) -> case
            when array_contains({{ huawei_drs_binary_jdbc_types() }}, {{ jdbc_types }}[column_name])
                then {{ java_byte_list_to_base64('column_value') }}
            when {{ binary_encodings }}[column_name] = 'hex'
                then {{ hex_text_to_base64('column_value') }}
            else column_value
        end
    )
{% endmacro %}


{#
    The staging model of a DRS JSON-shaped format (huawei_drs_json, huawei_drs_jsonc, huawei_drs_avro):
    one row per landed message, parsed, classified through cdc_operation_codes, with a quarantine reason.
    - decoded_text: SQL giving struct<text, error> for `landed.value` (the message as DRS JSON text).
    - deleted_rows_in: 'old' (JSON, Avro) or 'data' (JSON-C), where a DELETE carries its rows.
    - format_label: how quarantine reasons name the format.
#}
{% macro huawei_drs_staged_messages(source_format, decoded_text, deleted_rows_in, format_label) %}
{%- set deleted_rows = 'classified.message.' ~ deleted_rows_in -%}
{#- size(null) is -1 unless ANSI mode: absent row arrays are counted as empty arrays. -#}
with

landed as (
    {{ landed_messages([source_format]) }}
),

decoded as (
    select
        landed.*,
        {{ decoded_text }} as decoded_text
    from landed
),

parsed as (
    select
        decoded.*,
        from_json(
            decoded.decoded_text.text,
            '{{ huawei_drs_json_schema() }}',
            map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', '_corrupt_record')
        ) as message,
        coalesce(message.type, message.opType) as vendor_operation
    from decoded
),

operation_codes as (
    select
        vendor_operation,
        op
    from {{ ref('cdc_operation_codes') }}
    where source_format = '{{ source_format }}'
),

classified as (
    select
        parsed.*,
        operation_codes.op
    from parsed
    left join operation_codes
        on parsed.vendor_operation = operation_codes.vendor_operation
),

checked as (
    select
        classified.*,
        case
            when classified.decoded_text.error is not null then classified.decoded_text.error
            when classified.message is null then 'empty message'
            when classified.message._corrupt_record is not null
                then 'not a {{ format_label }} message (malformed JSON or wrong field types)'
            when classified.vendor_operation is null then 'no operation type (type / opType)'
            when classified.op is null then concat('unknown operation type: ', classified.vendor_operation)
            -- DRS numbers every event; without its number a change has no place in the order.
            when classified.message.id is null then 'no event sequence number (id)'
            when classified.op != 'ddl' and classified.message.table is null
                then 'row change without a table name'
            when classified.op in ('c', 'r', 'u') and size(coalesce(classified.message.data, array())) = 0
                then concat(classified.vendor_operation, ' without rows in data')
            when
                classified.op = 'u'
                and size(classified.message.data) != size(coalesce(classified.message.old, array()))
                then concat(
                        'update with ', size(classified.message.data), ' after images in data and ',
                        size(coalesce(classified.message.old, array())), ' before images in old'
                    )
            when classified.op = 'd' and size(coalesce({{ deleted_rows }}, array())) = 0
                then 'DELETE without rows in {{ deleted_rows_in }}'
        end as quarantine_reason
    from classified
)

select
    checked.source_format,
    checked.topic,
    checked.kafka_partition,
    checked.kafka_offset,
    checked.ingested_at,
    checked.message.id as drs_id,
    checked.message.es as source_commit_ms,
    lower(checked.message.dbType) as vendor_db_type,
    -- Oracle sources leave `database` empty ("暂时为空"): no database level then.
    nullif(checked.message.database, '') as source_database,
    nullif(checked.message.schema, '') as source_schema,
    checked.message.table as source_table,
    checked.vendor_operation,
    checked.op,
    nullif(checked.message.sql, '') as ddl_sql,
    coalesce(checked.message.mysqlType, checked.message.columnType) as column_types,
    -- sqlType holds java.sql.Types codes only in the MySQL form (the columnType form has its own codes).
    if(checked.message.columnType is null, checked.message.sqlType, null) as jdbc_types,
    checked.message.data as data_rows,
    checked.message.old as old_rows,
    coalesce(checked.message.pkNames, array()) as primary_key,
    nullif(checked.message.eventId, '') as drs_event_position,
    checked.quarantine_reason,
    -- Raw bytes are kept only where the quarantine needs them.
    if(checked.quarantine_reason is null, null, checked.value) as raw_value
from checked
{% endmacro %}


{#
    Change events of a DRS JSON-shaped staging model, in the cdc_events shape without event_id: one
    per row image of a message (`row_index` = its position in `data` / `old`), one per DDL message.
    deleted_rows_in: 'old' (JSON, Avro) or 'data' (JSON-C); an update's `old` holds its before image.
#}
{% macro huawei_drs_events(staging_model, deleted_rows_in) %}
with

messages as (
    select *
    from {{ ref(staging_model) }}
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
                when encoded_messages.op = 'd' then encoded_messages.{{ deleted_rows_in }}_rows
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
    row_images.primary_key,
    if(
        row_images.source_commit_ms > 0
        and not array_contains({{ huawei_drs_es_not_change_time_db_types() }}, row_images.source_db_type),
        timestamp_millis(row_images.source_commit_ms),
        null
    ) as event_ts,
    row_images.drs_id as source_seq,
    {{ event_order(['row_images.drs_id', 'row_images.row_index', 'row_images.kafka_partition', 'row_images.kafka_offset']) }}
        as event_order,
    coalesce(row_images.drs_event_position, cast(row_images.drs_id as string)) as source_position,
    row_images.ddl_sql,
    row_images.ingested_at
from row_images
{% endmacro %}
