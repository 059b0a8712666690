{{
    config(
        incremental_strategy='append'
    )
}}

{%- set batch = cdc_batch() -%}
{#- Every registered source format contributes its quarantined messages. -#}
{%- set format_messages = [] -%}
{%- for model_name in cdc_format_traits('quarantine') -%}
    {%- do format_messages.append(ref(model_name)) -%}
{%- endfor -%}

with

new_quarantined as (
    {% for messages in format_messages %}
        select
            topic,
            kafka_partition,
            kafka_offset,
            source_format,
            quarantine_reason as reason,
            raw_value,
            ingested_at
        from {{ messages }}
        where quarantine_reason is not null and {{ cdc_in_batch(batch) }}
        {% if not loop.last %}union all{% endif %}
    {% endfor %}
)

select
    new_quarantined.topic,
    new_quarantined.kafka_partition,
    new_quarantined.kafka_offset,
    new_quarantined.source_format,
    new_quarantined.reason,
    new_quarantined.raw_value,
    new_quarantined.ingested_at,
    {{ cdc_batch_id(batch) }} as cdc_batch_id
from new_quarantined
{% if is_incremental() %}
    left anti join {{ this }} as known
        on
            {{ same_message('new_quarantined', 'known') }}
{% endif %}
