{{ config(materialized='view') }}

{#
    Every vendor type text seen in cdc_events.column_types, per (source_format, source_db_type), with
    its type family, normalized form and mapping. A null parse_rule means no mapping: the test
    cdc_every_vendor_type_is_mapped warns of it. A view over the observed column types: it follows the
    type seeds as they are.
#}
with

observed as (
    select
        source_format,
        source_db_type,
        vendor_type_text,
        count(*) as source_columns
    from {{ ref('cdc_observed_column_types') }}
    group by source_format, source_db_type, vendor_type_text
),

families as (
    select
        source_format,
        source_db_type,
        type_family,
        value_encoding
    from {{ ref('cdc_type_families') }}
),

normalized as (
    select
        observed.*,
        coalesce(exact_family.type_family, any_db_family.type_family) as type_family,
        coalesce(exact_family.value_encoding, any_db_family.value_encoding) as value_encoding,
        {{ cdc_normalized_type('observed.vendor_type_text') }} as normalized_type
    from observed
    left join families as exact_family
        on
            observed.source_format = exact_family.source_format
            and observed.source_db_type = exact_family.source_db_type
    left join families as any_db_family
        on
            observed.source_format = any_db_family.source_format
            and any_db_family.source_db_type = '*'
),

candidates as (
    -- The seed rows that could map a type, best first: the lookup key before the bare base name,
    -- the family's value encoding before `default`.
    select
        normalized.source_format,
        normalized.source_db_type,
        normalized.vendor_type_text,
        mappings.vendor_type,
        mappings.spark_type,
        mappings.parse_rule,
        row_number() over (
            partition by normalized.source_format, normalized.source_db_type, normalized.vendor_type_text
            order by
                if(mappings.vendor_type = normalized.normalized_type.lookup_key, 0, 1),
                if(mappings.value_encoding = normalized.value_encoding, 0, 1)
        ) as preference
    from normalized
    inner join {{ ref('cdc_type_mappings') }} as mappings
        on
            normalized.type_family = mappings.type_family
            and mappings.vendor_type in (normalized.normalized_type.lookup_key, normalized.normalized_type.base)
            and mappings.value_encoding in (normalized.value_encoding, 'default')
)

select
    normalized.source_format,
    normalized.source_db_type,
    normalized.vendor_type_text,
    normalized.type_family,
    normalized.value_encoding,
    normalized.normalized_type.base as type_base,
    normalized.normalized_type.params as type_params,
    normalized.normalized_type.is_unsigned,
    normalized.normalized_type.lookup_key,
    candidates.vendor_type as mapped_vendor_type,
    {{ cdc_resolved_spark_type('candidates.spark_type', 'candidates.parse_rule', 'normalized.normalized_type.params') }}
        as spark_type,
    candidates.parse_rule,
    normalized.source_columns
from normalized
left join candidates
    on
        normalized.source_format = candidates.source_format
        and normalized.source_db_type <=> candidates.source_db_type
        and normalized.vendor_type_text = candidates.vendor_type_text
        and candidates.preference = 1
