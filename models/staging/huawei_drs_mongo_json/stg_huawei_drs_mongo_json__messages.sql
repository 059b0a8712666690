{{ config(enabled=cdc_models_enabled(staging='huawei_drs_mongo_json')) }}

with

parsed as (
    {{ parsed_json_messages('huawei_drs_mongo_json', huawei_drs_mongo_json_schema(), operation='message.op') }}
),

classified as (
    select
        parsed.*,
        {{ mongo_cluster_time_seq('parsed.message.clusterTime') }} as cluster_time_seq
    from parsed
),

-- The shell-syntax documents, parsed once: top-level field -> Extended JSON v2 relaxed text.
converted as (
    select
        classified.*,
        cdc_mongo_shell_fields(classified.message.value) as value_document,
        cdc_mongo_shell_fields(classified.message.where) as where_document
    from classified
),

documents as (
    select
        converted.*,
        converted.value_document.fields as value_fields,
        converted.where_document.fields as where_fields
    from converted
),

update_operators as (
    select
        documents.*,
        exists(map_keys(documents.value_fields), field_name -> startswith(field_name, '$')) as is_operator_update,
        {{ mongo_document_fields("documents.value_fields['$set']") }} as set_fields,
        map_keys(from_json(documents.value_fields['$unset'], 'map<string, string>')) as unset_field_names
    from documents
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
            when update_operators.value_document.error is not null
                then concat('value: ', update_operators.value_document.error)
            when update_operators.where_document.error is not null
                then concat('where: ', update_operators.where_document.error)
            when update_operators.value_fields is null then 'value is not a document'
            when update_operators.message.where is not null and update_operators.where_fields is null
                then 'where is not a document'
            when update_operators.op != 'u' and update_operators.is_operator_update
                then concat(update_operators.message.op, ' value holds update operators')
            when update_operators.op = 'c' and not map_contains_key(update_operators.value_fields, '_id')
                then 'INSERT value without _id'
            when
                update_operators.is_operator_update
                and exists(map_keys(update_operators.value_fields), field_name -> not startswith(field_name, '$'))
                then 'update mixes operators and fields'
            when
                update_operators.is_operator_update
                and exists(map_keys(update_operators.value_fields), field_name -> field_name not in ('$set', '$unset'))
                then concat(
                        'unsupported update operator: ',
                        array_join(
                            filter(
                                map_keys(update_operators.value_fields),
                                field_name -> field_name not in ('$set', '$unset')
                            ),
                            ', '
                        )
                    )
            when
                map_contains_key(update_operators.value_fields, '$set') and update_operators.set_fields is null
                then '$set is not a document'
            when
                map_contains_key(update_operators.value_fields, '$unset')
                and update_operators.unset_field_names is null
                then '$unset is not a document'
            when
                update_operators.is_operator_update
                and not coalesce(map_contains_key(update_operators.where_fields, '_id'), false)
                then 'update without _id in where'
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
