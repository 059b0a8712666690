{#
    The registry of source formats (var `cdc_formats`, dbt_project.yml): format names, and the models a
    format's role is read from. Names follow the staging folder: stg_<format>__..., int_<format>__....
#}
{% macro cdc_formats(waits_for=none) -%}
    {%- set formats = [] -%}
    {%- for source_format, traits in var('cdc_formats').items() -%}
        {%- if waits_for is none or (traits or {}).get('waits_for') == waits_for -%}
            {%- do formats.append(source_format) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(formats) }}
{%- endmacro %}


{# The model holding a format's quarantined messages (rows with a quarantine_reason). #}
{% macro cdc_format_quarantine(source_format) -%}
    {{ return(ref((var('cdc_formats')[source_format] or {}).get('quarantine', 'stg_' ~ source_format ~ '__messages'))) }}
{%- endmacro %}


{# No Kafka position: the empty side of a union over formats when no registered format has that role. #}
{% macro no_kafka_positions() -%}
    select
        cast(null as string) as topic,
        cast(null as int) as kafka_partition,
        cast(null as bigint) as kafka_offset
    where false
{%- endmacro %}
