{#
    The Alibaba Canal FlatMessage shape (canal-json), as Canal's Kafka/RocketMQ producers write it with
    flatMessage=true; newer releases add pkNames, some forks gtid. A message that does not fit lands in
    _corrupt_record and is quarantined. Row values are JSON strings or null: map<string, string> keeps a
    JSON null as a present key with a null value, which the update before-image rule depends on.
#}
{% macro canal_json_schema() -%}
    struct<
        id: decimal(38, 0),
        database: string,
        table: string,
        pkNames: array<string>,
        isDdl: boolean,
        type: string,
        es: bigint,
        ts: bigint,
        sql: string,
        sqlType: map<string, int>,
        mysqlType: map<string, string>,
        data: array<map<string, string>>,
        old: array<map<string, string>>,
        gtid: string,
        _corrupt_record: string
    >
{%- endmacro %}


{#
    The before image of a Canal update row: the after image overlaid with `old`, which carries only the
    changed columns. A column present in `old` takes its old value even when that is null (the old value
    was NULL); a column absent from `old` was not changed and keeps its after value.
#}
{% macro canal_update_before_image(after_image, old_image) %}
    map_concat(
        transform_values(
            {{ after_image }},
            (column_name, after_value) -> if(
                map_contains_key({{ old_image }}, column_name), {{ old_image }}[column_name], after_value
            )
        ),
        map_filter(
            coalesce({{ old_image }}, map()),
            (column_name, old_value) -> not map_contains_key({{ after_image }}, column_name)
        )
    )
{% endmacro %}


{# The base name of a MySQL column type as Canal's mysqlType writes it: "VARBINARY(16)" -> varbinary. #}
{% macro canal_column_base_type(column_type) -%}
    lower(regexp_extract({{ column_type }}, '^\\s*([A-Za-z]+)', 1))
{%- endmacro %}


{#
    Whether a message's binary column holds a character beyond ISO-8859-1: Canal writes a byte as one such
    character, so anything beyond is not a byte. Only the binary columns' values are matched (most messages
    have none).
#}
{% macro canal_binary_value_beyond_bytes(relation) %}
    exists(
        concat(coalesce({{ relation }}.message.data, array()), coalesce({{ relation }}.message.old, array())),
        image -> exists(
            map_keys({{ relation }}.binary_columns),
            column_name -> image[column_name] rlike '[^\\x00-\\xFF]'
        )
    )
{% endmacro %}


{#
    An image with the values of its binary columns (`binary_columns`: column -> type) as base64 of their
    bytes: Canal writes binary values as ISO-8859-1 text, one character per byte, so encoding the text
    as ISO-8859-1 gives the bytes back. Staging quarantines values with characters beyond that range.
#}
{% macro canal_binary_as_base64(image, binary_columns) %}
    transform_values(
        {{ image }},
        (column_name, column_value) -> if(
            map_contains_key({{ binary_columns }}, column_name),
            {{ unchunked_base64("encode(column_value, 'ISO-8859-1')") }},
            column_value
        )
    )
{% endmacro %}
