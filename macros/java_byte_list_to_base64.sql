{#
    Huawei DRS JSON writes binary values as Java byte lists: "[106, -103, 0]", "[]" for empty.
    Returns the bytes as base64, natively (a Python UDF cannot run inside the map lambdas that
    call this). Text that is not a byte list is kept as it came, never dropped.
#}
{% macro java_byte_list_to_base64(value) %}
    coalesce(
        {{ unchunked_base64("unhex(concat_ws('', transform(
            from_json(" ~ value ~ ", 'array<int>'),
            byte_value -> lpad(hex(byte_value & 255), 2, '0')
        )))") }},
        {{ value }}
    )
{% endmacro %}


{#
    base64 on one line: Spark's base64() breaks its output into MIME lines of 76 characters
    unless spark.sql.chunkBase64String.enabled is false, which this must not depend on.
#}
{% macro unchunked_base64(binary_value) %}
    regexp_replace(base64({{ binary_value }}), '[\\r\\n]', '')
{% endmacro %}
