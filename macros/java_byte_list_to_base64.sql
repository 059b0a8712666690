{#
    Huawei DRS JSON writes binary values as Java byte lists: "[106, -103, 0]", "[]" for empty.
    Returns the bytes as base64, natively (a Python UDF cannot run inside the map lambdas that
    call this). Text that is not a byte list is kept as it came, never dropped.
#}
{% macro java_byte_list_to_base64(value) %}
    coalesce(
        base64(unhex(concat_ws('', transform(
            from_json({{ value }}, 'array<int>'),
            byte_value -> lpad(hex(byte_value & 255), 2, '0')
        )))),
        {{ value }}
    )
{% endmacro %}
