{#
    A JSON message's bytes as struct<text, error>: strict UTF-8 text without a leading byte-order mark,
    or why there is none. Native: Spark's UTF-8 check rejects what Python's decoder does (stray and
    overlong bytes, surrogates, code points past U+10FFFF), where a cast alone would keep invalid bytes
    and from_json would read them as U+FFFD. The quarantine keeps the message's bytes, so the reason
    does not repeat them.
#}
{% macro cdc_decoded_text(value) -%}
    named_struct(
        'text', try_validate_utf8(cast(if(startswith({{ value }}, X'EFBBBF'), substr({{ value }}, 4), {{ value }}) as string)),
        'error', case
            when {{ value }} is null then 'message value is null'
            when not is_valid_utf8(cast({{ value }} as string)) then 'value is not valid UTF-8'
        end
    )
{%- endmacro %}
