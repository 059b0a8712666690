{#
    A typed table's guarantees in one query of its history model's rows (one dbt node and one Spark job,
    where a test each took three): its keys and flags are never null, one row per merge key (`key_column`:
    scd_id), one open version per key (chain_id: what the current model merges, so the current model, which
    holds those rows, needs no test of its own), and, given its source table, each typed column is stored
    with the type its source column maps to now (read from the table's schema at compile time, macro
    cdc_typed_column_mismatches). One row per problem: what is wrong, and where. Both keys are counted in
    one aggregation (grouping sets): a Spark stage per check cost a second a table for a handful of rows.
    On a current model (`key_column` chain_id, as an earlier cdc-scaffold wrote it), the same checks of
    its own rows.
#}
{% test cdc_typed_rows_hold(
    model, key_column, source_database=none, source_table=none, source_format=none, source_schema=none
) %}
    {%- set never_null = ['pk', 'is_current', 'is_deleted', 'scd_id', 'chain_id'] -%}
    {%- set mismatches = cdc_typed_column_mismatches(
        cdc_tested_relation(), source_database, source_table, source_format, source_schema
    ) if source_table is not none else [] -%}
    with

    tested_rows as (
        select * from {{ model }}
    ),

    -- One group per key value of each key: its rows, and its open versions.
    key_counts as (
        select
            grouping({{ key_column }}) = 0 as is_merge_key,
            coalesce({{ key_column }}, chain_id) as key_value,
            count(*) as key_rows,
            count_if(is_current) as open_versions
        from tested_rows
        group by grouping sets (({{ key_column }}){{ ', (chain_id)' if key_column != 'chain_id' }})
    )

    select
        'a null key or flag' as problem,
        to_json(named_struct(
            {%- for column in never_null %}
                '{{ column }}', {{ column }}{{ ',' if not loop.last }}
            {%- endfor %}
        )) as detail
    from tested_rows
    where {{ never_null | join(' is null or ') }} is null

    union all

    select
        'more than one row of its {{ key_column }}' as problem,
        key_value as detail
    from key_counts
    where is_merge_key and key_rows > 1

    union all

    -- What a current model merges by chain_id: a history's open versions, one per key.
    select
        'more than one open version of its chain_id' as problem,
        key_value as detail
    from key_counts
    where not is_merge_key and open_versions > 1
    {%- for mismatch in mismatches %}

    union all

    select
        {{ cdc_sql_string(
            'column ' ~ mismatch.column_name ~ ' stored as ' ~ mismatch.stored_type
            ~ ', its source column maps to ' ~ mismatch.source_type
        ) }} as problem,
        {{ cdc_sql_string([source_database, source_schema, source_table] | reject('none') | join('.')) }} as detail
    {%- endfor %}
{% endtest %}
