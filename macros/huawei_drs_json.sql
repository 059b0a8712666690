{#
    The message shape shared by Huawei DRS JSON and JSON-C: the MySQL form (mysqlType) and the
    Oracle / PostgreSQL / GaussDB / SQL Server form (columnType, dbType, schema, opType).
    A message that does not fit lands in _corrupt_record and is quarantined.
#}
{% macro huawei_drs_json_schema() -%}
    struct<
        id: decimal(38, 0),
        es: bigint,
        ts: bigint,
        dbType: string,
        database: string,
        schema: string,
        table: string,
        type: string,
        opType: string,
        isDdl: boolean,
        sql: string,
        mysqlType: map<string, string>,
        columnType: map<string, string>,
        sqlType: map<string, int>,
        data: array<map<string, string>>,
        old: array<map<string, string>>,
        pkNames: array<string>,
        eventId: string,
        _corrupt_record: string
    >
{%- endmacro %}


{# java.sql.Types codes whose values DRS writes as Java byte lists: BINARY, VARBINARY, LONGVARBINARY, BLOB. #}
{% macro huawei_drs_binary_jdbc_types() -%}
    array(-2, -3, -4, 2004)
{%- endmacro %}


{# A row image with Java byte lists of binary columns turned into base64. #}
{% macro huawei_drs_normalized_image(image, jdbc_types) %}
    transform_values(
        {{ image }},
        (column_name, column_value) -> if(
            array_contains({{ huawei_drs_binary_jdbc_types() }}, {{ jdbc_types }}[column_name]),
            {{ java_byte_list_to_base64('column_value') }},
            column_value
        )
    )
{% endmacro %}
