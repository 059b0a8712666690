{#
    What the staging models of the JSON formats share (README of each format's staging folder for what
    differs): the landed messages they have not staged, decoded as strict UTF-8 and parsed by from_json
    with the format's schema, permissive (a message that does not fit lands in _corrupt_record, never fails
    the batch); their vendor operations; the first reasons to quarantine one; and the columns every staging
    model ends with.
#}


{# The landed messages of these formats this model has not staged (landed_messages), with decoded_text. #}
{% macro decoded_messages(source_formats) %}
    select
        landed.*,
        {{ cdc_decoded_text('landed.value') }} as decoded_text
    from ({{ landed_messages(source_formats) }}) as landed
{% endmacro %}


{#
    The same, with the message parsed by from_json with the format's schema, and `op`: the canonical
    operation of its vendor operation (the field `operation` of the row: "message.type"), null when unknown.
#}
{% macro parsed_json_messages(source_format, schema, operation) %}
    select
        parsed.*,
        operation_codes.op
    from (
        select
            decoded.*,
            from_json(
                decoded.decoded_text.text,
                '{{ schema }}',
                map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', '_corrupt_record')
            ) as message
        from ({{ decoded_messages([source_format]) }}) as decoded
    ) as parsed
    left join ({{ vendor_operation_codes(source_format) }}) as operation_codes
        on parsed.{{ operation }} = operation_codes.vendor_operation
{% endmacro %}


{# The format's vendor operations and their canonical op (seed cdc_operation_codes). #}
{% macro vendor_operation_codes(source_format) %}
    select
        vendor_operation,
        op
    from {{ ref('cdc_operation_codes') }}
    where source_format = '{{ source_format }}'
{% endmacro %}


{#
    The first `when`s of a quarantine reason: bytes that are not UTF-8, no message, a message of another
    shape (message_name: "a Canal FlatMessage").
#}
{% macro json_message_problems(relation, message_name) %}
    when {{ relation }}.decoded_text.error is not null then {{ relation }}.decoded_text.error
    when {{ relation }}.message is null then 'empty message'
    when {{ relation }}.message._corrupt_record is not null
        then 'not {{ message_name }} (malformed JSON or wrong field types)'
{% endmacro %}


{# The columns every staging model starts with: the message's position and its batch. #}
{% macro staged_message_columns(relation) %}
    {{ relation }}.source_format,
    {{ relation }}.topic,
    {{ relation }}.kafka_partition,
    {{ relation }}.kafka_offset,
    {{ relation }}.ingested_at,
    {{ relation }}.cdc_batch_id
{%- endmacro %}


{# The columns every staging model ends with: the reason, and the bytes only where the quarantine needs them. #}
{% macro quarantine_columns(relation) %}
    {{ relation }}.quarantine_reason,
    if({{ relation }}.quarantine_reason is null, null, {{ relation }}.value) as raw_value
{%- endmacro %}
