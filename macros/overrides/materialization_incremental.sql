{# upstream: dbt-spark 1.11.0 dbt/include/spark/macros/materializations/incremental/incremental.sql incremental 8adfd0017127 #}
{#
    dbt-spark's incremental materialization, except for the pipeline's models once their table exists:
    - one with nothing to read in this batch (cdc_nothing_to_read: no landing commit of its formats and no
      upstream row since the batch it finished) runs its hooks and none of its SQL: a run without new
      messages costs no query per incremental model;
    - an append writes its batch in one statement (cdc_append_batch), without dbt-spark's temporary view and
      the descriptions of it: Spark analyses a model's query once, not twice.
    Any other model (an analyst's) is dbt-spark's, untouched.
#}
{% materialization incremental, adapter='spark', supported_languages=['sql', 'python'] -%}
    {%- if not cdc_pipeline_node(model) -%}
        {{ return(dbt.materialization_incremental_spark()) }}
    {%- endif -%}
    {%- set batch = cdc_batch() -%}
    {%- set existing = load_relation(this) -%}
    {%- set append = model.language == 'sql' and (config.get('incremental_strategy') or 'append') == 'append'
        and not should_full_refresh() and existing is not none and not existing.is_view -%}
    {%- if not (append or batch.nothing_to_read) -%}
        {{ return(dbt.materialization_incremental_spark()) }}
    {%- endif -%}
    {{ run_hooks(pre_hooks) }}
    {%- call statement('main') -%}
        {%- if batch.nothing_to_read -%}
            select 'nothing to read in batch {{ batch.batch_id }}' as status
        {%- else -%}
            {{ cdc_append_batch(this, compiled_code, config.get('on_schema_change') or 'ignore') }}
        {%- endif -%}
    {%- endcall -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
{%- endmaterialization %}


{#
    A pipeline model's batch appended to its table. on_schema_change 'fail': by name, so a column the
    model has and the table has not, or the reverse, fails the statement as dbt's check would; otherwise
    ('ignore') the table's columns, selected from the model's query as dbt-spark's append selects them.
    'append_new_columns' first adds the columns the model's YAML documents with a data_type and the table
    lacks (null in its earlier rows): a column added in a release reaches the tables of earlier ones.
#}
{% macro cdc_append_batch(relation, sql, on_schema_change) -%}
    {%- if on_schema_change == 'fail' -%}
        insert into {{ relation }} by name
        {{ sql }}
    {%- elif on_schema_change in ('ignore', 'append_new_columns') -%}
        {%- set table_columns = adapter.get_columns_in_relation(relation) -%}
        {%- if on_schema_change == 'append_new_columns' -%}
            {%- set existing = table_columns | map(attribute='name') | map('lower') | list -%}
            {%- set missing = [] -%}
            {%- for column in model.columns.values() if column.data_type and column.name | lower not in existing -%}
                {%- do missing.append(adapter.quote(column.name) ~ ' ' ~ column.data_type) -%}
            {%- endfor -%}
            {%- if missing -%}
                {%- do run_query('alter table ' ~ relation ~ ' add columns (' ~ missing | join(', ') ~ ')') -%}
                {%- set table_columns = adapter.get_columns_in_relation(relation) -%}
            {%- endif -%}
        {%- endif -%}
        insert into {{ relation }}
        select {{ table_columns | map(attribute='quoted') | join(', ') }} from (
            {{ sql }}
        ) as batch
    {%- else -%}
        {{ exceptions.raise_compiler_error(
            model.name ~ ': on_schema_change ' ~ on_schema_change ~ ' is not one a pipeline append supports'
        ) }}
    {%- endif -%}
{%- endmacro %}
