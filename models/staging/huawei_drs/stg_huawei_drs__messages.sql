{{ config(enabled=cdc_models_enabled(staging='huawei_drs')) }}

{#
    One row per landed message of the three DRS JSON-shaped formats (huawei_drs_json, huawei_drs_jsonc,
    huawei_drs_avro), in one message shape: the forms differ per row only in how the bytes become that
    message (UTF-8 JSON text read by from_json, or an Avro record read by from_avro with the writer schema)
    and where a DELETE carries its rows.
#}

{%- set avro_writer = huawei_drs_avro_writer_schema() %}

with

-- What differs between the three forms; the registry (var cdc_formats) gives them staging: huawei_drs.
drs_forms as (
    select *
    from values
        ('huawei_drs_json', 'old', 'Huawei DRS JSON'),
        ('huawei_drs_jsonc', 'data', 'Huawei DRS JSON-C'),
        ('huawei_drs_avro', 'old', 'Huawei DRS Avro')
            as drs_forms (source_format, deleted_rows_in, format_label)
),

landed as (
    {{ landed_messages(cdc_formats(staging='huawei_drs')) }}
),

json_texts as (
    select
        landed.*,
        {{ cdc_decoded_text('landed.value') }} as decoded_text
    from landed
    where landed.source_format != 'huawei_drs_avro'
),

avro_records as (
    select
        landed.*,
        {% if avro_writer.error -%}
            cast(null as boolean) as avro_record
        {%- else -%}
            {{ huawei_drs_avro_record('landed.value', avro_writer) }} as avro_record
        {%- endif %}
    from landed
    where landed.source_format = 'huawei_drs_avro'
),

parsed as (
    select
        json_texts.* except (decoded_text),
        json_texts.decoded_text.error as decode_error,
        from_json(
            json_texts.decoded_text.text,
            '{{ huawei_drs_json_schema() }}',
            map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', '_corrupt_record')
        ) as message
    from json_texts
    union all
    select
        avro_records.* except (avro_record),
        {% if avro_writer.error -%}
            {{ cdc_sql_string(avro_writer.error) }} as decode_error,
            from_json(cast(null as string), '{{ huawei_drs_json_schema() }}') as message
        {%- else -%}
            {{ huawei_drs_avro_error('avro_records.value', 'avro_records.avro_record', avro_writer) }}
                as decode_error,
            {{ huawei_drs_avro_message('avro_records.avro_record', avro_writer) }} as message
        {%- endif %}
    from avro_records
),

operation_codes as (
    select
        source_format,
        vendor_operation,
        op
    from {{ ref('cdc_operation_codes') }}
),

classified as (
    select
        parsed.*,
        coalesce(parsed.message.type, parsed.message.opType) as vendor_operation,
        operation_codes.op,
        drs_forms.deleted_rows_in,
        drs_forms.format_label,
        if(drs_forms.deleted_rows_in = 'data', parsed.message.data, parsed.message.old) as deleted_rows
    from parsed
    inner join drs_forms
        on parsed.source_format = drs_forms.source_format
    left join operation_codes
        on
            parsed.source_format = operation_codes.source_format
            and coalesce(parsed.message.type, parsed.message.opType) = operation_codes.vendor_operation
),

checked as (
    -- size(null) is -1 unless ANSI mode: absent row arrays are counted as empty arrays.
    select
        classified.*,
        case
            when classified.decode_error is not null then classified.decode_error
            when classified.message is null then 'empty message'
            when classified.message._corrupt_record is not null
                then concat('not a ', classified.format_label, ' message (malformed JSON or wrong field types)')
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
            when classified.op = 'd' and size(coalesce(classified.deleted_rows, array())) = 0
                then concat('DELETE without rows in ', classified.deleted_rows_in)
        end as quarantine_reason
    from classified
)

select
    {{ staged_message_columns('checked') }},
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
    checked.deleted_rows,
    coalesce(checked.message.pkNames, array()) as primary_key,
    nullif(checked.message.eventId, '') as drs_event_position,
    {{ quarantine_columns('checked') }}
from checked
