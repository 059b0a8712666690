{#
    The registry of source formats (var `cdc_formats`, dbt_project.yml). Formats of one shape can share
    models: `staging` names the staging folder and models (models/staging/<s>/stg_<s>__messages), `events`
    the intermediate models (int_<e>__events, int_<e>__update_pairs); by default both are the format.
    cdc_formats() lists the enabled formats only (var `cdc_enabled_formats`).
#}


{#
    The formats this deployment reads: var cdc_enabled_formats (a list of registered names), else the
    environment's CDC_ENABLED_FORMATS (names separated by commas: one project deployed per environment), by
    default all.
#}
{% macro cdc_enabled_formats() -%}
    {%- set registered = var('cdc_formats') | list -%}
    {%- set enabled = var('cdc_enabled_formats', none) -%}
    {%- if enabled is none and env_var('CDC_ENABLED_FORMATS', '') | trim -%}
        {%- set enabled = env_var('CDC_ENABLED_FORMATS').split(',') | map('trim') | reject('equalto', '') | list -%}
    {%- endif -%}
    {%- if enabled is none -%}
        {{ return(registered) }}
    {%- endif -%}
    {%- for source_format in enabled if source_format not in registered -%}
        {{ exceptions.raise_compiler_error(
            'cdc_enabled_formats (or CDC_ENABLED_FORMATS) names ' ~ source_format ~ ', which the registry cdc_formats does not list: '
            ~ registered | join(', ')
        ) }}
    {%- endfor -%}
    {{ return(registered | select('in', enabled) | list) }}
{%- endmacro %}


{# Registered formats this deployment does not read: their landed messages are left in landing. #}
{% macro cdc_disabled_formats() -%}
    {{ return(var('cdc_formats') | reject('in', cdc_enabled_formats()) | list) }}
{%- endmacro %}


{# Whether a model shared under this staging or events name has an enabled format: its config(enabled=...). #}
{# Whether this deployment reads the format: a typed model of its stream is enabled only then. #}
{% macro cdc_format_enabled(source_format) -%}
    {{ return(source_format in cdc_enabled_formats()) }}
{%- endmacro %}


{% macro cdc_models_enabled(staging=none, events=none) -%}
    {{ return(cdc_formats(staging=staging, events=events) | length > 0) }}
{%- endmacro %}


{# The enabled formats, those with the given traits only (what they wait for, their staging or events name). #}
{% macro cdc_formats(waits_for=none, staging=none, events=none) -%}
    {%- set formats = [] -%}
    {%- for source_format in cdc_enabled_formats() -%}
        {%- if (waits_for is none or cdc_format_trait(source_format, 'waits_for') == waits_for)
            and (staging is none or cdc_format_trait(source_format, 'staging') == staging)
            and (events is none or cdc_format_trait(source_format, 'events') == events) -%}
            {%- do formats.append(source_format) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(formats) }}
{%- endmacro %}


{# One trait of a format, with its default: staging and events names, quarantine model, waits_for. #}
{% macro cdc_format_trait(source_format, trait) -%}
    {%- set traits = var('cdc_formats')[source_format] or {} -%}
    {%- set staging = traits.get('staging', source_format) -%}
    {%- set defaults = {
        'staging': staging,
        'events': traits.get('events', staging),
        'quarantine': 'stg_' ~ staging ~ '__messages',
        'waits_for': none,
    } -%}
    {{ return(traits.get(trait, defaults[trait])) }}
{%- endmacro %}


{# The distinct values of one trait over the enabled formats (those waiting for `waits_for`), in registry order. #}
{% macro cdc_format_traits(trait, waits_for=none) -%}
    {%- set values = [] -%}
    {%- for source_format in cdc_formats(waits_for=waits_for) -%}
        {%- if cdc_format_trait(source_format, trait) not in values -%}
            {%- do values.append(cdc_format_trait(source_format, trait)) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(values) }}
{%- endmacro %}


{# No Kafka position: the empty side of a union over formats when no registered format has that role. #}
{% macro no_kafka_positions() -%}
    select
        cast(null as string) as topic,
        cast(null as int) as kafka_partition,
        cast(null as bigint) as kafka_offset
    where false
{%- endmacro %}
