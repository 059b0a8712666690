{#
    Huawei DRS JSON writes binary values as Java byte lists: "[106, -103, 0]", "[]" for empty.
    Returns the bytes as base64, natively (a Python UDF cannot run inside the map lambdas that
    call this). Text that is not a byte list is kept as it came, never dropped.
#}
{% macro java_byte_list_to_base64(value) %}
    {%- set byte_list = "from_json(" ~ value ~ ", 'array<int>')" -%}
    {#- concat_ws over a null array gives '', so text that is not a byte list is caught first. -#}
    if(
        {{ byte_list }} is null,
        {{ value }},
        {{ unchunked_base64("unhex(concat_ws('', transform(
            " ~ byte_list ~ ",
            byte_value -> lpad(hex(byte_value & 255), 2, '0')
        )))") }}
    )
{% endmacro %}


{#
    base64 on one line: Spark's base64() breaks its output into MIME lines of 76 characters
    unless spark.sql.chunkBase64String.enabled is false, which this must not depend on.
#}
{% macro unchunked_base64(binary_value) %}
    regexp_replace(base64({{ binary_value }}), '[\\r\\n]', '')
{% endmacro %}


{#
    Hex text of binary values (PostgreSQL / GaussDB bytea as DRS writes it, "62797465615f64617461";
    PostgreSQL's own "\x…" output form is accepted too) as base64. Text that is not an even number of
    hex digits is kept as it came, never dropped.
#}
{% macro hex_text_to_base64(value) %}
    if(
        {{ value }} rlike '^(\\\\x)?([0-9a-fA-F]{2})*\\z',
        {{ unchunked_base64("unhex(regexp_extract(" ~ value ~ ", '([0-9a-fA-F]*)$', 1))") }},
        {{ value }}
    )
{% endmacro %}
