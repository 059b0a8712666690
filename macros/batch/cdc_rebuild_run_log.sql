{#
    `dbt run-operation cdc_rebuild_run_log` (README, "Operating it": a lost run log): the run log written again
    from the batch stamps of the pipeline's incremental tables, replacing what it holds. Each model whose table
    has rows finished the newest batch it stamped (a model writes a batch in one Delta commit); a batch after
    it that gave the model nothing to write is read again, and gives nothing again. A model without rows gets
    no entry: it builds from scratch, as in a first run. The landing version those batches read is not in the
    tables: it is left unknown (null), so the next run's staging models read landing as it is and stage what
    they do not hold (they skip every message at an offset they hold), and later runs read its commits again;
    landing retention waits for that run. Batch ids go on after every id the tables, the run log and
    cdc_downstream_builds hold.
#}
{% macro cdc_rebuild_run_log() %}
    {%- do cdc_create_run_log() -%}
    {%- set run_log = cdc_run_log() -%}
    {%- set finished = {} -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.config.materialized == 'incremental' and cdc_pipeline_node(node) -%}
        {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) -%}
        {%- set newest = run_query('select max(cdc_batch_id) from ' ~ relation).rows[0][0] if relation else none -%}
        {%- if newest is not none -%}
            {%- do finished.update({node.name: newest | int}) -%}
        {%- endif -%}
    {%- endfor -%}
    {#- The newest id ever given: the next run's must be above it (cdc_downstream_builds compares them). -#}
    {%- set given = [0] + finished.values() | list -%}
    {%- do given.append(run_query('select max(batch_id) from ' ~ run_log ~ '.cdc_batches').rows[0][0] or 0) -%}
    {%- if adapter.get_relation(database=none, schema=run_log, identifier='cdc_downstream_builds') -%}
        {%- set built = run_query('select max(built_through) from ' ~ run_log ~ '.cdc_downstream_builds') -%}
        {%- do given.append(built.rows[0][0] or 0) -%}
    {%- endif -%}
    {%- set batch_ids = (finished.values() | list + [given | map('int') | max]) | unique | sort -%}
    {%- do run_query('delete from ' ~ run_log ~ '.cdc_batch_models') -%}
    {%- do run_query('delete from ' ~ run_log ~ '.cdc_batches') -%}
    {%- set batches = [] -%}
    {%- for batch_id in batch_ids -%}
        {%- do batches.append('(' ~ batch_id ~ ', null, current_timestamp())') -%}
    {%- endfor -%}
    {%- do run_query('insert into ' ~ run_log ~ '.cdc_batches values ' ~ batches | join(', ')) -%}
    {%- set models = [] -%}
    {%- for name, batch_id in finished.items() | sort -%}
        {%- do models.append('(' ~ cdc_sql_string(name) ~ ', ' ~ batch_id ~ ', current_timestamp())') -%}
        {%- do log('cdc_rebuild_run_log: ' ~ name ~ ' finished batch ' ~ batch_id, info=true) -%}
    {%- endfor -%}
    {%- if models -%}
        {%- do run_query('insert into ' ~ run_log ~ '.cdc_batch_models values ' ~ models | join(', ')) -%}
    {%- endif -%}
    {%- do log('cdc_rebuild_run_log: the next run opens batch ' ~ (batch_ids | max + 1), info=true) -%}
{% endmacro %}
