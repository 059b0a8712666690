{#
    Warns of every vendor type seen in cdc_events that no type seed maps, including the types of a
    (source_format, source_db_type) that seeds/cdc_type_families.csv gives no family. A finding about the
    source (its values stay text in the typed tables until a seed row maps the type), not a failed build.
#}
{{ config(severity='warn', tags=['audit']) }}

select
    source_format,
    source_db_type,
    type_family,
    vendor_type_text,
    lookup_key,
    source_columns
from {{ ref('cdc_vendor_types') }}
where parse_rule is null
