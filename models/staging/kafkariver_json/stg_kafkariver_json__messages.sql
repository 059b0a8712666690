{{ config(enabled=cdc_models_enabled(staging='kafkariver_json')) }}

with

parsed as (
    {{ parsed_json_messages('kafkariver_json', kafkariver_json_schema(), operation='message.event') }}
),

classified as (
    select
        parsed.*,
        {{ kafkariver_binlog_seq('parsed.message.binlog') }} as binlog_seq,
        transform(parsed.message.columns, column_value -> column_value.n) as column_names
    from parsed
),

checked as (
    select
        classified.*,
        case
            {{ json_message_problems('classified', 'a KafkaRiver message') }}
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
    {{ staged_message_columns('checked') }},
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
    {{ quarantine_columns('checked') }}
from checked
