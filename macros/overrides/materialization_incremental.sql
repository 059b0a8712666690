{# upstream: dbt-spark 1.11.0 dbt/include/spark/macros/materializations/incremental/incremental.sql incremental 8adfd0017127 #}
{#
    dbt-spark's incremental materialization, except that a pipeline model with nothing to read in this batch
    (cdc_nothing_to_read: no landing commit of its formats and no upstream row since the batch it finished) runs its hooks
    and none of its SQL: a run without new messages costs no query per incremental model. Any other model
    (an analyst's) is dbt-spark's, untouched.
#}
{% materialization incremental, adapter='spark', supported_languages=['sql', 'python'] -%}
    {%- if not cdc_pipeline_node(model) or not cdc_batch().nothing_to_read -%}
        {{ return(dbt.materialization_incremental_spark()) }}
    {%- endif -%}
    {{ run_hooks(pre_hooks) }}
    {%- call statement('main') -%}
        select 'nothing to read in batch {{ cdc_batch().batch_id }}' as status
    {%- endcall -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
{%- endmaterialization %}
