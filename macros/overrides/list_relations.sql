{# upstream: dbt-spark 1.11.0 dbt/include/spark/macros/adapters.sql spark__list_relations_without_caching cd133afb6df9 #}
{#
    The relations of a schema, which dbt lists at the start of every command for its cache. dbt-spark asks
    `show table extended` of every relation, and for a view Spark reads its stored definition and schema:
    1.2-2 s a command with 800 typed views (two per scaffolded source table), growing with the tables that
    exist, for nothing a run reads (docs/decisions.md, "dbt's relation cache lists views by name"). Here a
    view is listed by name (`show views`, its type all dbt's cache needs) and `show table extended` is asked
    of the tables alone: their provider decides how dbt-spark replaces one. When a command needs a view's
    columns, dbt-spark's fallback describes it. `dbt docs generate` lists as dbt-spark does: its catalog
    reads every view's columns from the listing. Row shape as dbt-spark's: schema, name, temporary,
    information.
#}
{% macro spark__list_relations_without_caching(relation) %}
    {%- if flags.WHICH == 'generate' -%}
        {{- return(dbt.spark__list_relations_without_caching(relation)) -}}
    {%- endif -%}
    {%- set views = run_query('show views in ' ~ relation.schema).rows
        | rejectattr('isTemporary') | map(attribute='viewName') | list -%}
    {%- set tables = run_query('show tables in ' ~ relation.schema).rows
        | rejectattr('isTemporary') | map(attribute='tableName') | reject('in', views) | list -%}
    {%- set listed = [] -%}
    {%- if tables -%}
        {#- A name a LIKE pattern would read as a pattern (not letters, digits and _) is asked with all the rest. -#}
        {%- set names = namespace(plain=true) -%}
        {%- for table in tables if not table.replace('_', '').isalnum() -%}
            {%- set names.plain = false -%}
        {%- endfor -%}
        {%- set pattern = tables | join('|') if names.plain else '*' -%}
        {%- for row in run_query('show table extended in ' ~ relation.schema ~ " like '" ~ pattern ~ "'").rows
            if row[1] in tables -%}
            {%- do listed.append([row[0], row[1], row[2], row[3]]) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- for view in views -%}
        {%- do listed.append([relation.schema, view, false, 'Type: VIEW']) -%}
    {%- endfor -%}
    {{- return(listed) -}}
{% endmacro %}
