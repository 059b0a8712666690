{# upstream: dbt-spark 1.11.0 dbt/include/spark/macros/materializations/incremental/strategies.sql spark__get_merge_sql 98f8b457ac11 #}
{#
    dbt-spark's merge (spark__get_merge_sql of dbt-spark 1.11.0, materializations/incremental/strategies.sql),
    with two changes. The columns are named one by one, each quoted (cdc_quoted_identifier), where dbt-spark
    writes `update set *` and `insert *`: Delta cannot expand `*` over a column whose name holds a backtick,
    which a source column of a typed table may. And the model config `merge_delete_when`: a boolean column
    of the model whose true rows delete their match in the table instead of updating it, and are not
    inserted (the typed current tables: a key whose open version is a delete leaves the table), in the same
    MERGE, so readers see a batch's deletes and upserts in one commit. dbt-spark admits no custom
    incremental strategy, so this replaces its merge; merge_update_columns and merge_exclude_columns keep
    their meaning (over the model's columns, which `*` stands for). A model that is not the pipeline's (an
    analyst's) gets dbt-spark's merge, untouched.
#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {%- if not cdc_pipeline_node(model) -%}
        {{- return(dbt.spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates)) -}}
    {%- endif -%}
    {%- set columns = adapter.get_columns_in_relation(source) | map(attribute='name') | list -%}
    {%- set update_columns = config.get('merge_update_columns') or [] -%}
    {%- if not update_columns -%}
        {%- set excluded = (config.get('merge_exclude_columns') or []) | map('lower') | list -%}
        {%- for column in columns if column | lower not in excluded -%}
            {%- do update_columns.append(column) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set predicates = [] + (incremental_predicates or []) -%}
    {%- set keys = [] if unique_key is none else ([unique_key] if unique_key is string else unique_key) -%}
    {%- for key in keys -%}
        {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
    {%- endfor -%}
    {%- if not keys -%}
        {%- do predicates.append('FALSE') -%}
    {%- endif -%}
    {%- set delete_when = config.get('merge_delete_when') -%}
    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ source }} as DBT_INTERNAL_SOURCE
    on {{ predicates | join(' and ') }}
    {%- if delete_when %}
    when matched and DBT_INTERNAL_SOURCE.{{ delete_when }} then delete
    {%- endif %}
    when matched then update set
    {%- for column in update_columns %}
        {{ cdc_quoted_identifier(column) }} = DBT_INTERNAL_SOURCE.{{ cdc_quoted_identifier(column) }}
        {{- ',' if not loop.last }}
    {%- endfor %}
    when not matched {%- if delete_when %} and not DBT_INTERNAL_SOURCE.{{ delete_when }}{% endif %} then insert (
    {%- for column in columns %}
        {{ cdc_quoted_identifier(column) }}{{ ',' if not loop.last }}
    {%- endfor %}
    ) values (
    {%- for column in columns %}
        DBT_INTERNAL_SOURCE.{{ cdc_quoted_identifier(column) }}{{ ',' if not loop.last }}
    {%- endfor %}
    )
{% endmacro %}
