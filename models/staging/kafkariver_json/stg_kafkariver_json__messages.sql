{{ config(enabled=cdc_models_enabled(staging='kafkariver_json')) }}

with

landed as (
    {{ landed_messages(['kafkariver_json']) }}
),

decoded as (
    select
        landed.*,
        {{ cdc_decoded_text('landed.value') }} as decoded_text
    from landed
),

parsed as (
    select
        decoded.*,
        from_json(
            decoded.decoded_text.text,
            '{{ kafkariver_json_schema() }}',
            map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', '_corrupt_record')
        ) as message,
        {{ kafkariver_binlog_seq('message.binlog') }} as binlog_seq
    from decoded
),

operation_codes as (
    select
        vendor_operation,
        op
    from {{ ref('cdc_operation_codes') }}
    where source_format = 'kafkariver_json'
),

classified as (
    select
        parsed.*,
        operation_codes.op,
        transform(parsed.message.columns, column_value -> column_value.n) as column_names
    from parsed
    left join operation_codes
        on parsed.message.event = operation_codes.vendor_operation
),

checked as (
    select
        classified.*,
        case
            when classified.decoded_text.error is not null then classified.decoded_text.error
            when classified.message is null then 'empty message'
            when classified.message._corrupt_record is not null
                then 'not a KafkaRiver message (malformed JSON or wrong field types)'
            when classified.message.event is null then 'no operation type (event)'
            when classified.op is null then concat('unknown operation type: ', classified.message.event)
            when classified.message.table is null then 'row change without a table name'
            when classified.message.binlog is null then 'no binlog position'
            when classified.binlog_seq is null
                then concat('binlog position not offset@file.number: ', classified.message.binlog)
            when size(coalesce(classified.message.columns, array())) = 0 then 'row change without columns'
            when exists(classified.column_names, column_name -> column_name is null)
                then 'column without a name (n)'
            when size(array_distinct(classified.column_names)) != size(classified.column_names)
                then 'duplicate column names in columns'
        end as quarantine_reason
    from classified
)

select
    checked.source_format,
    checked.topic,
    checked.kafka_partition,
    checked.kafka_offset,
    checked.ingested_at,
    checked.cdc_batch_id,
    checked.message.binlog as binlog_position,
    checked.binlog_seq,
    checked.message.time as source_event_ms,
    checked.message.canalTime as canal_received_ms,
    checked.message.db as source_database,
    checked.message.table as source_table,
    checked.message.event as vendor_operation,
    checked.op,
    checked.message.columns as row_columns,
    coalesce(checked.message.keys, array()) as primary_key,
    checked.message.xid as transaction_id,
    checked.quarantine_reason,
    -- Raw bytes are kept only where the quarantine needs them.
    if(checked.quarantine_reason is null, null, checked.value) as raw_value
from checked
