{#
    Fails on every typed column of a typed history model stored with a type other than the one its source
    column maps to now: a type change the stored column could not widen to (for example varchar to int),
    which the merge writes cast to the stored type (macro cdc_typed_columns). One row per column: the source
    table, the column, the stored type and the source's type, read at compile time from the table's schema
    (macro cdc_typed_column_mismatches). `dbt build --full-refresh -s <model>+` rebuilds the table with the
    source's types. cdc_typed_rows_hold makes the same check; earlier cdc-scaffold versions wrote this one.
#}
{#- The table's arguments are named source_*: dbt takes `database` and `schema` of a test for its config. -#}
{% test cdc_typed_columns_hold_their_types(
    model, source_database, source_table, source_format=none, source_schema=none
) %}
    {%- set table_name = [source_database, source_schema, source_table] | reject('none') | join('.') -%}
    {%- set mismatches = cdc_typed_column_mismatches(
        cdc_tested_relation(), source_database, source_table, source_format, source_schema
    ) -%}
    {%- for mismatch in mismatches %}
        select
            {{ cdc_sql_string(table_name) }} as source_table,
            {{ cdc_sql_string(mismatch.column_name) }} as column_name,
            {{ cdc_sql_string(mismatch.stored_type) }} as stored_type,
            {{ cdc_sql_string(mismatch.source_type) }} as source_type
        {{ 'union all' if not loop.last }}
    {%- else %}
        select
            cast(null as string) as source_table,
            cast(null as string) as column_name,
            cast(null as string) as stored_type,
            cast(null as string) as source_type
        where false
    {%- endfor %}
{% endtest %}
