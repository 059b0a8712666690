{#
    The DataWorks StreamX JSON message (DataHub Blob topics and whole-database sync to Kafka).
    Column values are parsed as text: Spark keeps a JSON string's characters and writes any other
    JSON value (number, true/false, object) as its JSON text, so LONG values keep every digit.
    A message that does not fit lands in _corrupt_record and is quarantined.
#}
{% macro aliyun_streamx_json_schema() -%}
    struct<
        `schema`: struct<
            dataColumn: array<struct<name: string, type: string>>,
            primaryKey: array<string>,
            source: struct<
                dbType: string,
                dbVersion: string,
                dbName: string,
                schemaName: string,
                tableName: string
            >
        >,
        payload: struct<
            before: struct<dataColumn: map<string, string>>,
            after: struct<dataColumn: map<string, string>>,
            sequenceId: string,
            scn: string,
            op: string,
            `timestamp`: struct<eventTime: bigint, systemTime: bigint, checkpointTime: bigint>,
            ddl: struct<text: string, ddlMeta: string>
        >,
        version: string,
        _corrupt_record: string
    >
{%- endmacro %}


{# The StreamX type whose values are base64 text and are checked as such. #}
{% macro aliyun_streamx_base64_type() -%}
    'BYTES'
{%- endmacro %}
