{#
    The KafkaRiver (Canal-derived, GSON-encoded) binlog message: one row change per message, its columns
    as [{n, t, v, null, updated, origin_val}]. A message that does not fit lands in _corrupt_record.
#}
{% macro kafkariver_json_schema() -%}
    struct<
        binlog: string,
        time: bigint,
        canalTime: bigint,
        db: string,
        table: string,
        event: string,
        columns: array<struct<
            n: string,
            t: string,
            v: string,
            `null`: boolean,
            updated: boolean,
            origin_val: string
        >>,
        keys: array<string>,
        xid: string,
        _corrupt_record: string
    >
{%- endmacro %}


{#
    The binlog position "offset@file" as one decimal(38, 0) ordering number: the binlog file's sequence
    number (the digits after its last dot) times 10^20, plus the offset. Null when the text is not of that
    form (at most 20 offset digits, at most 18 file-number digits).
#}
{% macro kafkariver_binlog_seq(binlog) %}
    if(
        {{ binlog }} rlike '^[0-9]{1,20}@.*[.][0-9]{1,18}$',
        cast(concat(
            regexp_extract({{ binlog }}, '[.]([0-9]+)$', 1),
            lpad(regexp_extract({{ binlog }}, '^([0-9]+)@', 1), 20, '0')
        ) as decimal(38, 0)),
        null
    )
{% endmacro %}
