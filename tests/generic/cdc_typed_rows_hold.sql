{#
    A typed table's guarantees in one query of its history model's rows (one dbt node and one Spark job,
    where a test each took three): its keys and flags are never null, one row per merge key (`key_column`:
    scd_id), one open version per key (chain_id: what the current model merges, so the current model, which
    holds those rows, needs no test of its own), and, given its source table, each typed column holds the
    type its source column maps to now (test cdc_typed_columns_hold_their_types). One row per problem: what
    is wrong, and where. On a current model (`key_column` chain_id, as an earlier cdc-scaffold wrote it), the
    same checks of its own rows.
#}
{% test cdc_typed_rows_hold(
    model, key_column, source_database=none, source_table=none, source_format=none, source_schema=none
) %}
    {%- set never_null = ['pk', 'is_current', 'is_deleted', 'scd_id', 'chain_id'] -%}
    with

    tested_rows as (
        select * from {{ model }}
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
        {{ key_column }} as detail
    from tested_rows
    group by {{ key_column }}
    having count(*) > 1

    union all

    -- What a current model merges by chain_id: a history's open versions, one per key.
    select
        'more than one open version of its chain_id' as problem,
        chain_id as detail
    from tested_rows
    group by chain_id
    having count_if(is_current) > 1
    {%- if source_table is not none %}

    union all

    -- The stored types are the table's: one row is enough to read them.
    select
        concat(
            'column ', mismatched.column_name, ' stored as ', mismatched.stored_type,
            ', its source column maps to ', mismatched.source_type
        ) as problem,
        mismatched.source_table as detail
    from ({{ test_cdc_typed_columns_hold_their_types(
        '(select * from tested_rows limit 1) as first_row',
        source_database, source_table, source_format, source_schema
    ) }}) as mismatched
    {%- endif %}
{% endtest %}
