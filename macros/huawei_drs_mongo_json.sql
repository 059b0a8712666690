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
