{#
    Fails on every typed column of a typed history model whose values do not have the Spark type its source
    column maps to now: a type change the stored column could not widen to (for example varchar to int),
    which the merge writes cast to the stored type (macro cdc_typed_columns). One row per column: the source
    table, the column, the stored type and the source's type. `dbt build --full-refresh -s <model>+`
    rebuilds the table with the source's types.
#}
{#- The table's arguments are named source_*: dbt takes `database` and `schema` of a test for its config. -#}
{% test cdc_typed_columns_hold_their_types(
    model, source_database, source_table, source_format=none, source_schema=none
) %}
    {%- set columns = cdc_table_typed_columns(source_database, source_table, source_format, source_schema) -%}
    {%- set table_name = [source_database, source_schema, source_table] | reject('none') | join('.') -%}
    {%- if columns %}
        select distinct
            {{ cdc_sql_string(table_name) }} as source_table,
            typed_column.column_name,
            typed_column.stored_type,
            typed_column.source_type
        from {{ model }}
            lateral view explode(array(
                {%- for column in columns %}
                    named_struct(
                        'column_name', {{ cdc_sql_string(column.alias) }},
                        'stored_type', typeof({{ cdc_quoted_identifier(column.alias) }}),
                        'source_type', {{ cdc_sql_string(column.spark_type) }}
                    ){{ ',' if not loop.last }}
                {%- endfor %}
            )) typed_columns as typed_column
        where typed_column.stored_type != typed_column.source_type
    {%- else %}
        select
            cast(null as string) as source_table,
            cast(null as string) as column_name,
            cast(null as string) as stored_type,
            cast(null as string) as source_type
        where false
    {%- endif %}
{% endtest %}
