{{ config(enabled=cdc_models_enabled(staging='aliyun_datahub_tuple')) }}

with

-- Every value as text: strings as they are, numbers and booleans as their JSON text.
parsed as (
    {{ parsed_json_messages('aliyun_datahub_tuple', 'map<string, string>', operation="message['_operation_type_']") }}
),

classified as (
    select
        parsed.*,
        parsed.message['_operation_type_'] as vendor_operation,
        parsed.message['_sequence_id_'] as sequence_id,
        coalesce(parsed.message['_execute_time_'], parsed.message['_excute_time_']) as execute_time,
        parsed.message['_before_image_'] as before_image_flag,
        parsed.message['_after_image_'] as after_image_flag,
        map_filter(
            parsed.message,
            (column_name, column_value) -> not array_contains({{ aliyun_datahub_tuple_meta_columns() }}, column_name)
        ) as data_columns
    from parsed
),

checked as (
    select
        classified.*,
        case
            when classified.decoded_text.error is not null then classified.decoded_text.error
            when classified.message is null then 'not a DataHub Tuple record (malformed JSON or not a JSON object)'
            when classified.vendor_operation is null then 'no operation (_operation_type_)'
            when classified.op is null then concat('unknown operation: ', classified.vendor_operation)
            when classified.sequence_id is null then 'no _sequence_id_'
            when not classified.sequence_id rlike '^[0-9]{1,38}$'
                then concat('_sequence_id_ is not a number: ', classified.sequence_id)
            when classified.message['_source_table_'] is null then 'no _source_table_'
            when try_cast(classified.execute_time as bigint) is null and classified.execute_time is not null
                then concat('_execute_time_ is not a number: ', classified.execute_time)
            when try_cast(classified.execute_time as bigint) >= {{ aliyun_max_epoch_millis() }}
                then concat('_execute_time_ out of range: ', classified.execute_time)
            when not {{ aliyun_datahub_tuple_image_flags_fit('classified') }}
                then concat(
                        'image flags _before_image_=', coalesce(classified.before_image_flag, 'null'),
                        ' _after_image_=', coalesce(classified.after_image_flag, 'null'),
                        ' do not fit operation ', classified.vendor_operation
                    )
        end as quarantine_reason
    from classified
)

select
    {{ staged_message_columns('checked') }},
    checked.vendor_operation,
    checked.op,
    -- An update is two records: the half is told by its image flags.
    if(checked.op = 'u', if(checked.before_image_flag = 'Y', 'before', 'after'), null) as update_half,
    checked.sequence_id,
    -- A Tuple record names neither its database nor its database type.
    cast(null as string) as vendor_db_type,
    cast(null as string) as source_database,
    cast(null as string) as source_schema,
    checked.message['_source_table_'] as source_table,
    if(checked.before_image_flag = 'Y', checked.data_columns, null) as before_image,
    if(checked.after_image_flag = 'Y', checked.data_columns, null) as after_image,
    -- Types are the Tuple topic's schema, which the record does not carry.
    cast(null as map <string, string>) as column_types,
    cast(array() as array<string>) as primary_key,
    {{ aliyun_epoch_millis('try_cast(checked.execute_time as bigint)') }} as event_ts,
    checked.sequence_id as source_position,
    cast(null as string) as ddl_sql,
    {{ quarantine_columns('checked') }}
from checked
