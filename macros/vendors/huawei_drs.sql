{#
    The message shape shared by Huawei DRS JSON and JSON-C: the MySQL form (mysqlType) and the
    Oracle / PostgreSQL / GaussDB / SQL Server form (columnType, dbType, schema, opType).
    A message that does not fit lands in _corrupt_record and is quarantined.
#}
{% macro huawei_drs_json_schema() -%}
    struct<
        {%- for field, data_type in huawei_drs_json_fields() %}
        {{ field }}: {{ data_type }}{{ ',' if not loop.last }}
        {%- endfor %}
    >
{%- endmacro %}


{# The fields of huawei_drs_json_schema and their types, as (name, type) pairs. #}
{% macro huawei_drs_json_fields() -%}
    {{ return([
        ('id', 'decimal(38, 0)'),
        ('es', 'bigint'),
        ('ts', 'bigint'),
        ('dbType', 'string'),
        ('database', 'string'),
        ('schema', 'string'),
        ('table', 'string'),
        ('type', 'string'),
        ('opType', 'string'),
        ('isDdl', 'boolean'),
        ('sql', 'string'),
        ('mysqlType', 'map<string, string>'),
        ('columnType', 'map<string, string>'),
        ('sqlType', 'map<string, int>'),
        ('data', 'array<map<string, string>>'),
        ('old', 'array<map<string, string>>'),
        ('pkNames', 'array<string>'),
        ('eventId', 'string'),
        ('_corrupt_record', 'string'),
    ]) }}
{%- endmacro %}


{#
    java.sql.Types codes whose values the MySQL form writes as Java byte lists: BINARY, VARBINARY,
    LONGVARBINARY, BLOB. (The columnType form's sqlType codes are not java.sql.Types: its binary
    columns are named by type in the huawei_drs_binary_column_types seed.)
#}
{% macro huawei_drs_binary_jdbc_types() -%}
    array(-2, -3, -4, 2004)
{%- endmacro %}


{#
    Canonical source_db_type values whose DRS `es` is not the commit time of the change itself:
    for PostgreSQL the vendor defines `es` as the commit time of the record's previous transaction,
    so event_ts is left null (unknown) rather than set to an earlier time.
#}
{% macro huawei_drs_es_not_change_time_db_types() -%}
    array('postgresql')
{%- endmacro %}


{#
    A row image with binary values as base64: Java byte lists of the MySQL form (by JDBC code),
    and values of the columns `binary_encodings` names (column -> encoding, from the
    huawei_drs_binary_column_types seed), e.g. PostgreSQL / GaussDB bytea hex text.
#}
{% macro huawei_drs_normalized_image(image, jdbc_types, binary_encodings) %}
    transform_values(
        {{ image }},
        (column_name, column_value) -> case
            when array_contains({{ huawei_drs_binary_jdbc_types() }}, {{ jdbc_types }}[column_name])
                then {{ java_byte_list_to_base64('column_value') }}
            when {{ binary_encodings }}[column_name] = 'hex'
                then {{ hex_text_to_base64('column_value') }}
            else column_value
        end
    )
{% endmacro %}
