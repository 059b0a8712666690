{#
    A Huawei DRS Avro message as struct<text, error>: the DRS JSON text of the record, read by the UDF
    cdc_drs_avro_to_json with the writer schema file of the var `huawei_drs_avro_schema` (default: env
    CDC_DRS_AVRO_SCHEMA). Without a configured schema no record can be read: every message gets that
    reason (and is quarantined) instead of failing the build.
#}
{% macro huawei_drs_avro_decoded(value) -%}
    {%- set schema_path = var('huawei_drs_avro_schema', '') | trim -%}
    {%- if schema_path -%}
        cast(
            cdc_drs_avro_to_json({{ value }}, '{{ schema_path | replace("\\", "\\\\") | replace("'", "\\'") }}')
            as struct<text: string, error: string>
        )
    {%- else -%}
        named_struct(
            'text', cast(null as string),
            'error', 'no writer schema configured for Huawei DRS Avro (var huawei_drs_avro_schema / env CDC_DRS_AVRO_SCHEMA)'
        )
    {%- endif -%}
{%- endmacro %}
