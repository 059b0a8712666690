{{ config(enabled=cdc_models_enabled(staging='huawei_drs_mongo_json')) }}

with

parsed as (
    {{ parsed_json_messages('huawei_drs_mongo_json', huawei_drs_mongo_json_schema(), operation='message.op') }}
),

-- The shell-syntax documents, parsed once: top-level field -> Extended JSON v2 relaxed text.
classified as (
    select
        parsed.*,
        {{ mongo_cluster_time_seq('parsed.message.clusterTime') }} as cluster_time_seq,
        cdc_mongo_shell_fields(parsed.message.value) as value_document,
        cdc_mongo_shell_fields(parsed.message.where) as where_document
    from parsed
),

update_operators as (
    select
        classified.*,
        classified.value_document.fields as value_fields,
        classified.where_document.fields as where_fields,
        exists(
            map_keys(classified.value_document.fields), field_name -> startswith(field_name, '$')
        ) as is_operator_update,
        {{ mongo_document_fields("classified.value_document.fields['$set']") }} as set_fields,
        map_keys(from_json(classified.value_document.fields['$unset'], 'map<string, string>')) as unset_field_names
    from classified
),

checked as (
    select
        update_operators.*,
        case
            {{ json_message_problems('update_operators', 'a Huawei DRS MongoDB JSON message') }}
            when update_operators.message.op is null then 'no operation type (op)'
            when update_operators.op is null then concat('unknown operation type: ', update_operators.message.op)
            when update_operators.message.clusterTime is null then 'no clusterTime'
            when update_operators.cluster_time_seq is null
                then concat('clusterTime not seconds:increment: ', update_operators.message.clusterTime)
            when update_operators.op = 'ddl' then null
            when update_operators.message.coll is null then 'row change without a collection name (coll)'
            when update_operators.message.value is null then concat(update_operators.message.op, ' without value')
            {{ mongo_shell_document_problems('update_operators') }}
            when update_operators.op != 'u' and update_operators.is_operator_update
                then concat(update_operators.message.op, ' value holds update operators')
            when update_operators.op = 'c' and not map_contains_key(update_operators.value_fields, '_id')
                then 'INSERT value without _id'
            {{ mongo_update_operator_problems('update_operators') }}
            when
                not map_contains_key(update_operators.value_fields, '_id')
                and not coalesce(map_contains_key(update_operators.where_fields, '_id'), false)
                then concat(update_operators.message.op, ' without _id in value or where')
        end as quarantine_reason
    from update_operators
)

select
    {{ staged_message_columns('checked') }},
    checked.message.id as drs_id,
    checked.message.es as drs_commit_ms,
    checked.message.clusterTime as cluster_time,
    checked.cluster_time_seq,
    lower(checked.message.dbType) as vendor_db_type,
    checked.message.db as source_database,
    checked.message.coll as source_table,
    checked.message.op as vendor_operation,
    checked.message.recordType as record_type,
    checked.op,
    checked.message.value as value_shell,
    checked.message.where as where_shell,
    checked.value_fields,
    checked.where_fields,
    checked.is_operator_update,
    checked.set_fields,
    checked.unset_field_names,
    {{ quarantine_columns('checked') }}
from checked
