{{ config(enabled=cdc_models_enabled(events='huawei_drs_mongo_json')) }}

{#
    One change event per Huawei DRS MongoDB message. Images are the documents' top-level fields, each value
    as its Extended JSON text. An insert's after image is `value`; a replacement's after image is `value`
    (the whole new document); a $set / $unset update's after image is the document's _id, the $set fields and
    the $unset fields as nulls (a partial image); an update's before image is the `where` filter (the _id,
    and the shard key where DRS gives one); a delete's before image is `value` (the deleted document's _id).
#}
with

messages as (
    select *
    from {{ ref('stg_huawei_drs_mongo_json__messages') }}
    where quarantine_reason is null
),

source_db_types as (
    select
        vendor_db_type,
        source_db_type
    from {{ ref('source_db_types') }}
),

images as (
    select
        messages.*,
        coalesce(messages.where_fields, cast(map() as map <string, string>)) as filter_fields,
        coalesce(messages.set_fields, cast(map() as map <string, string>)) as assigned_fields
    from messages
),

operator_updates as (
    select
        images.*,
        map_concat(
            map_filter(images.filter_fields, (field_name, field_text) -> field_name = '_id'),
            map_filter(images.assigned_fields, (field_name, field_text) -> field_name != '_id'),
            map_from_entries(transform(
                filter(
                    coalesce(images.unset_field_names, cast(array() as array<string>)),
                    field_name -> field_name != '_id' and not map_contains_key(images.assigned_fields, field_name)
                ),
                field_name -> struct(field_name, cast(null as string))
            ))
        ) as updated_fields,
        map_concat(
            images.value_fields,
            map_filter(
                images.filter_fields,
                (field_name, field_text) -> not map_contains_key(images.value_fields, field_name)
            )
        ) as value_with_filter_fields
    from images
)

select
    operator_updates.source_format,
    operator_updates.topic,
    operator_updates.kafka_partition,
    operator_updates.kafka_offset,
    0 as row_index,
    coalesce(source_db_types.source_db_type, 'mongodb') as source_db_type,
    operator_updates.source_database,
    cast(null as string) as source_schema,
    operator_updates.source_table,
    operator_updates.op,
    case
        when operator_updates.op = 'u' then operator_updates.where_fields
        when operator_updates.op = 'd' then operator_updates.value_with_filter_fields
    end as before,
    case
        when operator_updates.op = 'c' then operator_updates.value_fields
        when operator_updates.op = 'u' and operator_updates.is_operator_update then operator_updates.updated_fields
        when
            operator_updates.op = 'u'
            then map_concat(
                    operator_updates.value_fields,
                    map_filter(
                        operator_updates.filter_fields,
                        (field_name, field_text) -> field_name = '_id'
                        and not map_contains_key(operator_updates.value_fields, '_id')
                    )
                )
    end as after,
    cast(null as map <string, string>) as column_types,
    -- An insert or a replacement is the whole document; a $set / $unset update says nothing of other fields.
    if(
        operator_updates.op = 'c' or (operator_updates.op = 'u' and not operator_updates.is_operator_update),
        map_keys(operator_updates.value_fields),
        null
    ) as row_columns,
    if(operator_updates.op = 'ddl', cast(array() as array<string>), array('_id')) as primary_key,
    timestamp_seconds(cast(split_part(operator_updates.cluster_time, ':', 1) as bigint)) as event_ts,
    operator_updates.cluster_time_seq as source_seq,
    -- A transaction's operations share its clusterTime: the offset orders them.
    {{ event_order([
        'operator_updates.cluster_time_seq', 'operator_updates.kafka_partition', 'operator_updates.kafka_offset'
    ]) }} as event_order,
    operator_updates.cluster_time as source_position,
    if(operator_updates.op = 'ddl', operator_updates.value_shell, null) as ddl_sql,
    operator_updates.ingested_at,
    operator_updates.cdc_batch_id
from operator_updates
left join source_db_types
    on operator_updates.vendor_db_type = source_db_types.vendor_db_type
