{#
    The writer schema of Huawei DRS Avro records (var `huawei_drs_avro_schema`, by default env
    CDC_DRS_AVRO_SCHEMA), read when the model runs: from_avro takes it as a literal. A dict of `json` (the
    schema text), `fields`, `binary_image_fields` (data / old written as maps of bytes) and `error` (why no
    record can be read: every message is quarantined with it, the build goes on). Read by the UDF
    cdc_drs_avro_writer_schema, which checks what Spark could not plan with (python_udfs/huawei_drs_avro.py).
#}
{% macro huawei_drs_avro_writer_schema() %}
    {%- set path = var('huawei_drs_avro_schema', '') | trim -%}
    {%- if not path -%}
        {{ return({'error': 'no writer schema configured for Huawei DRS Avro (var huawei_drs_avro_schema / env CDC_DRS_AVRO_SCHEMA)'}) }}
    {%- endif -%}
    {%- if not execute -%}
        {{ return({'error': 'the writer schema is read when the model runs'}) }}
    {%- endif -%}
    {%- set read_schema -%}
        select
            writer.schema.json,
            to_json(writer.schema.fields) as fields,
            to_json(writer.schema.binary_image_fields) as binary_image_fields,
            writer.schema.error
        from (select cdc_drs_avro_writer_schema({{ cdc_sql_string(path) }}) as schema) as writer
    {%- endset -%}
    {%- set schema = run_query(read_schema).rows[0] -%}
    {{ return({
        'json': schema[0],
        'fields': fromjson(schema[1] or '[]'),
        'binary_image_fields': fromjson(schema[2] or '[]'),
        'error': schema[3],
    }) }}
{% endmacro %}


{#
    One message's Avro record, read by from_avro with the writer schema. Permissive: bytes that are not a
    record of the schema give a record of nulls, never a failed batch (huawei_drs_avro_error names them).
#}
{% macro huawei_drs_avro_record(value, writer) -%}
    from_avro({{ value }}, {{ cdc_sql_string(writer.json) }}, map('mode', 'PERMISSIVE'))
{%- endmacro %}


{#
    Why a message is not one record of the writer schema, or null. from_avro reads one record and ignores
    what follows it: re-encoding the record with the same schema gives its length (map entries may come back
    in another order, never another length), so trailing bytes are found too.
#}
{% macro huawei_drs_avro_error(value, record, writer) -%}
    {%- set schema_name = cdc_sql_string('not a Huawei DRS Avro record of the writer schema ' ~ var('huawei_drs_avro_schema', '') | trim) -%}
    case
        when {{ value }} is null then 'message value is null'
        when
            {% for field in writer.fields -%}
                {{ record }}.{{ cdc_quoted_identifier(field) }} is null{{ ' and' if not loop.last }}
            {% endfor %}
            then concat({{ schema_name }}, ' (from_avro could not read it)')
        when length(to_avro({{ record }}, {{ cdc_sql_string(writer.json) }})) != length({{ value }})
            then concat(
                    {{ schema_name }}, ': ',
                    length({{ value }}) - length(to_avro({{ record }}, {{ cdc_sql_string(writer.json) }})),
                    ' bytes left after the record'
                )
    end
{%- endmacro %}


{#
    A record as the DRS JSON message it stands for (huawei_drs_json_schema): the fields the writer schema
    has, cast to the JSON shape's types; image values written as bytes become base64, as DRS JSON writes
    binary. Fields it does not have are null.
#}
{% macro huawei_drs_avro_message(record, writer) -%}
    named_struct(
        {%- for field, data_type in huawei_drs_json_fields() %}
            '{{ field }}',
            {% if field in writer.binary_image_fields -%}
                transform(
                    {{ record }}.{{ cdc_quoted_identifier(field) }},
                    image -> transform_values(image, (column_name, column_value) -> base64(column_value))
                )
            {%- elif field in writer.fields -%}
                cast({{ record }}.{{ cdc_quoted_identifier(field) }} as {{ data_type }})
            {%- else -%}
                cast(null as {{ data_type }})
            {%- endif %}{{ ',' if not loop.last }}
        {%- endfor %}
    )
{%- endmacro %}
