{#
    Every vendor type mapping of every family: the seeds cdc_types__<family>, one row per
    (type_family, vendor_type, value_encoding).
#}
{%- set type_families = [
    'mysql', 'jdbc', 'streamx', 'tencent_dts', 'postgresql', 'oracle', 'sqlserver', 'mongodb', 'datahub'
] -%}

with

mappings as (
    {% for type_family in type_families %}
        select
            '{{ type_family }}' as type_family,
            vendor_type,
            value_encoding,
            spark_type,
            parse_rule
        from {{ ref('cdc_types__' ~ type_family) }}
        {% if not loop.last %}union all{% endif %}
    {% endfor %}
)

select
    type_family,
    vendor_type,
    value_encoding,
    spark_type,
    parse_rule
from mappings
