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
            when decoded_text.error is not null then decoded_text.error
            when message is null then 'empty message'
            when message._corrupt_record is not null
                then 'not a Huawei DRS JSON message (malformed JSON or wrong field types)'
            when vendor_operation is null then 'no operation type (type / opType)'
            when op is null then concat('unknown operation type: ', vendor_operation)
            when op != 'ddl' and message.table is null then 'row change without a table name'
            when op in ('c', 'r', 'u') and coalesce(size(message.data), 0) = 0
                then concat(vendor_operation, ' without rows in data')
            when op = 'u' and size(message.data) != coalesce(size(message.old), 0)
                then concat(
                    'update with ', size(message.data), ' after images in data and ',
                    coalesce(size(message.old), 0), ' before images in old'
                )
            when op = 'd' and coalesce(size(message.old), 0) = 0 then 'DELETE without rows in old'
        end as quarantine_reason
    from classified
)

select
    source_format,
    topic,
    kafka_partition,
    kafka_offset,
    ingested_at,
    message.id as drs_id,
    message.es as source_commit_ms,
    lower(message.dbType) as vendor_db_type,
    message.database as database_name,
    message.schema as schema_name,
    message.table as table_name,
    vendor_operation,
    op,
    nullif(message.sql, '') as ddl_sql,
    coalesce(message.mysqlType, message.columnType) as column_types,
    message.sqlType as jdbc_types,
    message.data as data_rows,
    message.old as old_rows,
    coalesce(message.pkNames, array()) as primary_key,
    nullif(message.eventId, '') as drs_event_position,
    quarantine_reason,
    -- Raw bytes are kept only where the quarantine needs them.
    if(quarantine_reason is null, null, value) as raw_value
from checked
