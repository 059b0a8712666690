{{ config(enabled=cdc_models_enabled(staging='canal_json')) }}

with

parsed as (
    {{ parsed_json_messages('canal_json', canal_json_schema(), operation='message.type') }}
),

binary_column_types as (
    select collect_set(column_type) as column_types
    from {{ ref('canal_binary_column_types') }}
),

classified as (
    select /*+ broadcast(binary_column_types) */
        parsed.*,
        map_filter(
            parsed.message.mysqlType,
            (column_name, column_type) -> array_contains(
                binary_column_types.column_types, {{ canal_column_base_type('column_type') }}
            )
        ) as binary_columns,
        -- Canal writes a DELETE's rows in data; Tencent CKafka's canal-compatible output in old, data null.
        if(
            size(coalesce(parsed.message.data, array())) > 0, parsed.message.data, parsed.message.old
        ) as deleted_rows
    from parsed
    cross join binary_column_types
),

checked as (
    select
        classified.*,
        case
            {{ json_message_problems('classified', 'a Canal FlatMessage') }}
            when classified.message.type is null then 'no operation type (type)'
            when classified.op is null then concat('unknown operation type: ', classified.message.type)
            when classified.op in ('c', 'r', 'u', 'd') and classified.message.isDdl
                then concat(classified.message.type, ' flagged isDdl')
            when classified.op in ('c', 'r', 'u', 'd') and classified.message.table is null
                then 'row change without a table name'
            when classified.op in ('c', 'r', 'u') and size(coalesce(classified.message.data, array())) = 0
                then concat(classified.message.type, ' without rows in data')
            when classified.op = 'd' and size(coalesce(classified.deleted_rows, array())) = 0
                then 'DELETE without rows in data or old'
            when
                classified.op = 'u'
                and size(classified.message.data) != size(coalesce(classified.message.old, array()))
                then concat(
                        'update with ', size(classified.message.data), ' after images in data and ',
                        size(coalesce(classified.message.old, array())), ' change sets in old'
                    )
            when {{ canal_binary_value_beyond_bytes('classified') }}
                then 'a binary column holds characters beyond ISO-8859-1 (not one byte per character)'
        end as quarantine_reason
    from classified
)

select
    {{ staged_message_columns('checked') }},
    checked.message.id as canal_id,
    checked.message.es as source_execute_ms,
    checked.message.ts as canal_built_ms,
    checked.message.database as source_database,
    checked.message.table as source_table,
    checked.message.type as vendor_operation,
    checked.op,
    checked.message.isDdl as is_ddl,
    nullif(checked.message.sql, '') as ddl_sql,
    checked.message.mysqlType as column_types,
    checked.binary_columns,
    checked.message.sqlType as jdbc_types,
    checked.message.data as data_rows,
    checked.message.old as old_rows,
    if(checked.op = 'd', checked.deleted_rows, null) as deleted_rows,
    coalesce(checked.message.pkNames, array()) as primary_key,
    nullif(checked.message.gtid, '') as gtid,
    {{ quarantine_columns('checked') }}
from checked
