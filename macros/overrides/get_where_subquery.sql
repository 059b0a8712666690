{# upstream: dbt-adapters 1.24.5 dbt/include/global_project/macros/materializations/tests/where_subquery.sql default__get_where_subquery e0e1dcabd25c #}
{#
    The rows a data test reads (README, "The scheduled run"). Every test of the pipeline's folders
    is configured `where: __this_batch__` (dbt_project.yml; analysts' tests read what dbt says): it reads,
    of an incremental model, the rows stamped with the newest batch (the run's own in `dbt build`), and of
    the landing table the commits of that batch, so a scheduled run tests what it wrote, not whole tables. Tests of other relations, the
    tests only the audit runs (tag `audit`: the history invariants, the reconciliation) and every test of
    the audit (selector audit) read every row. In the run that opened the batch, a model that had nothing
    to read wrote no row of it: its tests read an empty relation (Spark plans no scan, not even of the
    other side of a relationships test).
#}
{% macro spark__get_where_subquery(relation) -%}
    {%- if config.get('where') != '__this_batch__' -%}
        {{- return(dbt.default__get_where_subquery(relation)) -}}
    {%- endif -%}
    {%- set tested_id = model.attached_node or (model.depends_on.nodes | first) -%}
    {%- if 'audit' in model.tags or invocation_args_dict.get('selector') == 'audit' or not tested_id -%}
        {{- return(relation) -}}
    {%- elif tested_id.startswith('source.') -%}
        {%- set state = cdc_run_state() -%}
        {{- return(cdc_landed_rows({
            'landing_version': state.landing_version,
            'finished_landing_version': state.previous_landing_version
        }) ~ ' as dbt_subquery') -}}
    {%- elif graph.nodes[tested_id].config.materialized == 'incremental' -%}
        {%- set state = cdc_run_state() -%}
        {%- set batch_rows = 'false' if state.get('opened') and cdc_nothing_to_read(state, graph.nodes[tested_id])
            else 'cdc_batch_id = ' ~ state.batch_id -%}
        {{- return('(select * from ' ~ relation ~ ' where ' ~ batch_rows ~ ') as dbt_subquery') -}}
    {%- endif -%}
    {{- return(relation) -}}
{%- endmacro %}
