with

landed as (
    {{ landed_messages(['huawei_drs_json']) }}
),

decoded as (
    select
        landed.*,
        cdc_decode_utf8(landed.value) as decoded_text
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
    where source_format = 'huawei_drs_json'
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
                then 'not a Huawei DRS JSON message (malformed JSON or wrong field types)'
            when classified.vendor_operation is null then 'no operation type (type / opType)'
            when classified.op is null then concat('unknown operation type: ', classified.vendor_operation)
            when classified.op != 'ddl' and classified.message.table is null
                then 'row change without a table name'
            when classified.op in ('c', 'r', 'u') and coalesce(size(classified.message.data), 0) = 0
                then concat(classified.vendor_operation, ' without rows in data')
            when
                classified.op = 'u'
                and size(classified.message.data) != coalesce(size(classified.message.old), 0)
                then concat(
                        'update with ', size(classified.message.data), ' after images in data and ',
                        coalesce(size(classified.message.old), 0), ' before images in old'
                    )
            when classified.op = 'd' and coalesce(size(classified.message.old), 0) = 0
                then 'DELETE without rows in old'
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
    checked.message.database as source_database,
    checked.message.schema as source_schema,
    checked.message.table as source_table,
    checked.vendor_operation,
    checked.op,
    nullif(checked.message.sql, '') as ddl_sql,
    coalesce(checked.message.mysqlType, checked.message.columnType) as column_types,
    checked.message.sqlType as jdbc_types,
    checked.message.data as data_rows,
    checked.message.old as old_rows,
    coalesce(checked.message.pkNames, array()) as primary_key,
    nullif(checked.message.eventId, '') as drs_event_position,
    checked.quarantine_reason,
    -- Raw bytes are kept only where the quarantine needs them.
    if(checked.quarantine_reason is null, null, checked.value) as raw_value
from checked
