{# Deterministic change-event id: the same landed message and row always give the same id. #}
{% macro event_id(source_format, topic, kafka_partition, kafka_offset, row_index) %}
    sha2(concat_ws(
        '/', {{ source_format }}, {{ topic }}, cast({{ kafka_partition }} as string),
        cast({{ kafka_offset }} as string), cast({{ row_index }} as string)
    ), 256)
{% endmacro %}
