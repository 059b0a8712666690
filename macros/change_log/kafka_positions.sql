{#
    Join conditions on where Kafka put a message: the same topic and partition, and for the same message
    the same offset too (offsets count per partition). `left` and `right` are relation aliases, or paths to
    structs that hold these columns.
#}
{% macro same_partition(left, right) -%}
    {{ left }}.topic = {{ right }}.topic and {{ left }}.kafka_partition = {{ right }}.kafka_partition
{%- endmacro %}


{% macro same_message(left, right) -%}
    {{ same_partition(left, right) }} and {{ left }}.kafka_offset = {{ right }}.kafka_offset
{%- endmacro %}
