{#
    Why a text is not strict base64, or null (also for null): strict is what java.util.Base64.getEncoder()
    writes (RFC 4648 section 4): the standard alphabet, no line breaks, a length that is a multiple of 4,
    '=' padding only at the end, and zero unused bits in the last character ("QQ==" is "A"; "QR==" decodes
    to "A" too under lenient decoders, but no encoder writes it: re-encoding the decoded bytes shows it).
    \z, not $: in Java's regular expressions $ also matches before a final line break.
#}
{% macro strict_base64_error(text) -%}
    case
        when {{ text }} rlike '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\\z'
            then if(
                {{ unchunked_base64('unbase64(' ~ text ~ ')') }} = {{ text }},
                null,
                'unused bits of the last character are not zero (not canonical)'
            )
        when char_length({{ text }}) % 4 != 0 then concat('length ', char_length({{ text }}), ' is not a multiple of 4')
        when {{ text }} rlike '[^A-Za-z0-9+/=]'
            then concat('character \'', regexp_extract({{ text }}, '([^A-Za-z0-9+/=])', 1), '\' is not in the base64 alphabet')
        when {{ text }} is not null then 'padding \'=\' is misplaced'
    end
{%- endmacro %}


{#
    The first value of a map<string, string> (in name order) that is not strict base64, as
    "name: reason"; null when every value is (or the map is null or empty).
#}
{% macro first_invalid_base64(named_values) -%}
    try_element_at(
        transform(
            filter(
                transform(
                    sort_array(map_entries({{ named_values }})),
                    named_value -> named_struct(
                        'name', named_value.key, 'error', {{ strict_base64_error('named_value.value') }}
                    )
                ),
                checked -> checked.error is not null
            ),
            invalid -> concat(invalid.name, ': ', invalid.error)
        ),
        1
    )
{%- endmacro %}
