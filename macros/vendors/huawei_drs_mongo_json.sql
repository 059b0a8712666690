{#
    The Huawei DRS JSON message of a DDS (MongoDB) source: `value` and `where` are MongoDB shell-syntax
    documents carried as JSON strings. A message that does not fit lands in _corrupt_record.
#}
{% macro huawei_drs_mongo_json_schema() -%}
    struct<
        id: decimal(38, 0),
        op: string,
        dbType: string,
        db: string,
        coll: string,
        value: string,
        where: string,
        recordType: string,
        extra: string,
        es: bigint,
        ts: bigint,
        clusterTime: string,
        _corrupt_record: string
    >
{%- endmacro %}


{#
    The top-level fields of an Extended JSON document (the text of a `$set`) as map<string, string>, each
    value as its JSON text: strings quoted and escaped, numbers, booleans, arrays and objects (Extended JSON
    wrappers such as {"$oid": "…"} included) as compact JSON in their own field order; a JSON null is a null
    value. Null when the text is not a JSON object. The text is parsed twice, not once per field: as text
    values (which keep objects' field order) and as variants (which tell a string from other values).
#}
{% macro mongo_document_fields(json_text) %}
    map_zip_with(
        from_json({{ json_text }}, 'map<string, string>'),
        from_json({{ json_text }}, 'map<string, variant>'),
        (field_name, field_text, field_value) -> if(
            schema_of_variant(field_value) = 'STRING', to_json(field_value), field_text
        )
    )
{% endmacro %}


{#
    The oplog timestamp "seconds:increment" as one ordering number: seconds * 10^10 + increment (the
    increment is a 32-bit counter, below 10^10). Null when the text is not of that form.
#}
{% macro mongo_cluster_time_seq(cluster_time) %}
    if(
        {{ cluster_time }} rlike '^[0-9]{1,12}:[0-9]{1,10}$',
        cast(concat(
            split_part({{ cluster_time }}, ':', 1), lpad(split_part({{ cluster_time }}, ':', 2), 10, '0')
        ) as decimal(38, 0)),
        null
    )
{% endmacro %}


{#
    The `when`s of a quarantine reason for a message's shell-syntax documents (`value`, `where`): shell
    syntax that does not parse, a value that is not a document.
#}
{% macro mongo_shell_document_problems(relation) %}
    when {{ relation }}.value_document.error is not null then concat('value: ', {{ relation }}.value_document.error)
    when {{ relation }}.where_document.error is not null then concat('where: ', {{ relation }}.where_document.error)
    when {{ relation }}.value_fields is null then 'value is not a document'
    when {{ relation }}.message.where is not null and {{ relation }}.where_fields is null
        then 'where is not a document'
{% endmacro %}


{#
    The `when`s of a quarantine reason for an update's operators: fields beside operators, an operator
    other than $set and $unset, a $set or $unset that is not a document, an update without _id in where.
#}
{% macro mongo_update_operator_problems(relation) %}
    when
        {{ relation }}.is_operator_update
        and exists(map_keys({{ relation }}.value_fields), field_name -> not startswith(field_name, '$'))
        then 'update mixes operators and fields'
    when
        {{ relation }}.is_operator_update
        and exists(map_keys({{ relation }}.value_fields), field_name -> field_name not in ('$set', '$unset'))
        then concat(
                'unsupported update operator: ',
                array_join(
                    filter(
                        map_keys({{ relation }}.value_fields),
                        field_name -> field_name not in ('$set', '$unset')
                    ),
                    ', '
                )
            )
    when
        map_contains_key({{ relation }}.value_fields, '$set') and {{ relation }}.set_fields is null
        then '$set is not a document'
    when
        map_contains_key({{ relation }}.value_fields, '$unset')
        and {{ relation }}.unset_field_names is null
        then '$unset is not a document'
    when
        {{ relation }}.is_operator_update
        and not coalesce(map_contains_key({{ relation }}.where_fields, '_id'), false)
        then 'update without _id in where'
{% endmacro %}
