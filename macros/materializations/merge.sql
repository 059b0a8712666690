{#
    dbt-spark's merge, plus the model config `merge_delete_when`: a boolean column of the model whose true
    rows delete their match in the table instead of updating it, and are not inserted (the typed current
    tables: a key whose open version is a delete leaves the table). One MERGE: readers see a batch's
    deletes and upserts in one commit. dbt-spark admits no custom incremental strategy, so this overrides
    its merge for the models that set the config and hands every other model to dbt-spark's.
#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {%- set delete_when = config.get('merge_delete_when') -%}
    {%- if not delete_when -%}
        {{ return(dbt.spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates)) }}
    {%- endif -%}
    {%- set predicates = [] + (incremental_predicates or []) -%}
    {%- for key in ([unique_key] if unique_key is string else unique_key) -%}
        {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
    {%- endfor -%}
    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ source }} as DBT_INTERNAL_SOURCE
    on {{ predicates | join(' and ') }}
    when matched and DBT_INTERNAL_SOURCE.{{ delete_when }} then delete
    when matched then update set *
    when not matched and not DBT_INTERNAL_SOURCE.{{ delete_when }} then insert *
{% endmacro %}
