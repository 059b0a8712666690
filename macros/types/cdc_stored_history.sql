{#
    Materialization cdc_stored_history: a typed history model (models/tables/, cdc-scaffold's) stored as a
    Delta table of its typed rows, for a table analysts read all day (README, "Typed tables and querying";
    docs/decisions.md, "Typed tables analysts read all day are stored"). A deployment marks the model in
    dbt_project.yml (`+materialized: cdc_stored_history`); its current model stays a view over it.

    The table is partitioned by is_current (its last column), so the current view reads the open versions'
    files alone. A build
    merges by scd_id the model's rows of the batches after the newest one the table holds (a batch stamps
    again the versions of every chain it touched, the ones it closes too); versions of a key only grow, so a
    merge leaves none stale. It is created whole (from every version in cdc_history) when it does not exist
    or is a view, at --full-refresh, and when a column of its source table was added or retyped
    (cdc_table_columns.typing_changed_in_batch) after the batch it was typed in (its property
    cdc.typed_in_batch): every version reads its column's type of now, as the views do. cdc-build builds it
    in the runs whose batches gave its table new versions.
#}
{% materialization cdc_stored_history, adapter='spark' %}
    {%- set target = this.incorporate(type='table') -%}
    {%- set existing = load_cached_relation(this) -%}
    {%- set typed_in = cdc_stored_history_typed_in(config.get('meta') or {}) -%}
    {{ run_hooks(pre_hooks) }}
    {%- if existing is none or not existing.is_table or should_full_refresh()
        or cdc_stored_history_typed_before(existing, typed_in) -%}
        {%- if existing is not none and not existing.is_table -%}
            {%- do adapter.drop_relation(existing) -%}
        {%- endif -%}
        {%- call statement('main') -%}
            create or replace table {{ target }}
            using delta
            partitioned by (is_current)
            tblproperties (
                'delta.enableDeletionVectors' = 'true',
                {#- A source's DATETIME reads as timestamp_ntz: a Delta table holds one only with the feature on. #}
                'delta.feature.timestampNtz' = 'supported',
                'cdc.typed_in_batch' = '{{ typed_in }}'
            )
            as
            -- The metastore keeps a partition column last: Spark refuses to replace a table whose is not.
            select versions.* except (is_current), versions.is_current
            from ({{ sql }}) as versions
        {%- endcall -%}
    {%- else -%}
        {%- set newest = run_query('select max(cdc_batch_id) from ' ~ target).columns[0].values()[0] -%}
        {%- call statement('main') -%}
            merge into {{ target }} as stored
            using (
                select *
                from ({{ sql }}) as versions
                where versions.cdc_batch_id > {{ newest if newest is not none else -1 }}
            ) as new_versions
            on stored.scd_id = new_versions.scd_id
            when matched then update set *
            when not matched then insert *
        {%- endcall -%}
    {%- endif -%}
    {{ run_hooks(post_hooks) }}
    {%- do adapter.commit() -%}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}


{#
    The newest batch that added or retyped a column of the model's source table (its meta: cdc_source_table,
    or cdc_route's tables), -1 when none says.
#}
{% macro cdc_stored_history_typed_in(meta) %}
    {%- if meta.get('cdc_route') -%}
        {%- set predicate = cdc_route_table_predicate(none, meta['cdc_route']) -%}
    {%- else -%}
        {%- set source_table = meta.get('cdc_source_table') or {} -%}
        {%- if not source_table.get('source_table') -%}
            {{ exceptions.raise_compiler_error(
                'cdc_stored_history: ' ~ this ~ ' names no source table (meta cdc_source_table or cdc_route)'
            ) }}
        {%- endif -%}
        {%- set predicate = cdc_source_table_filter(
            none, source_table.get('source_database'), source_table['source_table'],
            source_table.get('source_format'), source_table.get('source_schema')
        ) -%}
    {%- endif -%}
    {%- set typed_in = run_query(
        'select max(coalesce(typing_changed_in_batch, cdc_batch_id)) from ' ~ ref('cdc_table_columns')
        ~ ' where ' ~ predicate
    ).columns[0].values()[0] -%}
    {{ return(typed_in if typed_in is not none else -1) }}
{% endmacro %}


{# Whether the stored table was typed before the batch `typed_in` (or says not when). #}
{% macro cdc_stored_history_typed_before(relation, typed_in) %}
    {%- for row in run_query('show tblproperties ' ~ relation).rows if row['key'] == 'cdc.typed_in_batch' -%}
        {{ return(row['value'] | int < typed_in) }}
    {%- endfor -%}
    {{ return(true) }}
{% endmacro %}
