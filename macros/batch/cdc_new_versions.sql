{#
    For an analyst's incremental model that reads only what the batches wrote since its last run (README,
    "Building on it"): the rows of a pipeline table stamped with cdc_batch_id (a typed history or current
    table, cdc_history, cdc_events) in batches after the newest one this model's table holds, or every row
    on a first build or a full refresh. The model selects cdc_batch_id from the table, so its own table
    says how far it has read; a batch that rewrites a version (a history's version it closes) stamps it
    again, so merge by the table's key (unique_key='scd_id' on a history). The bound is a literal: Delta
    skips the files of older batches. Optional: a model that does not call it is plain dbt.
#}
{% macro cdc_new_versions(relation) -%}
    {%- if execute and is_incremental() -%}
        {%- set newest = run_query('select max(cdc_batch_id) from ' ~ this).columns[0].values()[0] -%}
        (select * from {{ relation }} where cdc_batch_id > {{ newest if newest is not none else -1 }})
    {%- else -%}
        {{ relation }}
    {%- endif -%}
{%- endmacro %}
