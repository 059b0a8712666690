{# upstream: dbt-adapters 1.24.5 dbt/include/global_project/macros/materializations/models/incremental/on_schema_change.sql default__process_schema_changes 2142d2c74e80 #}
{#
    dbt's handling of schema changes of an incremental model, after the typed tables' own: a model that
    appends new columns (the typed tables) first adds the new columns itself, each name quoted
    (cdc_quoted_identifier: dbt-spark's add columns leaves a backtick in a name bare), with Delta's column
    mapping by name turned on first (a table created before it was in the folder's tblproperties: names with
    spaces or ,;{}()= need it), then widens each stored column whose type the new rows widen
    (cdc_type_widens), in place with Delta's type widening, so the merge writes the wider values. A column
    that becomes timestamp_ntz (a DATETIME added by DDL, a DATE widened) needs Delta's timestampNtz feature,
    which Delta turns on by itself only when a table is created with such a column: it is turned on first.
    A model that is not the pipeline's (an analyst's) gets dbt's handling alone.
#}
{% macro spark__process_schema_changes(on_schema_change, source_relation, target_relation) %}
    {%- if on_schema_change == 'append_new_columns' and cdc_pipeline_node(model) -%}
        {%- set stored = {} -%}
        {%- for column in adapter.get_columns_in_relation(target_relation) -%}
            {%- do stored.update({column.name | lower: column}) -%}
        {%- endfor -%}
        {%- set additions = [] -%}
        {%- set widenings = [] -%}
        {%- for column in adapter.get_columns_in_relation(source_relation) -%}
            {%- set old = stored.get(column.name | lower) -%}
            {%- if old is none -%}
                {%- do additions.append(cdc_quoted_identifier(column.name) ~ ' ' ~ column.data_type) -%}
            {%- elif cdc_type_widens(old.data_type, column.data_type) -%}
                {%- do widenings.append(
                    'alter table ' ~ target_relation ~ ' alter column ' ~ cdc_quoted_identifier(old.name)
                    ~ ' type ' ~ column.data_type
                ) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- set features = ["'delta.columnMapping.mode' = 'name'"] if additions else [] -%}
        {%- if widenings -%}
            {%- do features.append("'delta.enableTypeWidening' = 'true'") -%}
        {%- endif -%}
        {%- if 'timestamp_ntz' in (additions + widenings) | join(' ') -%}
            {%- do features.append("'delta.feature.timestampNtz' = 'supported'") -%}
        {%- endif -%}
        {%- if features -%}
            {%- do run_query('alter table ' ~ target_relation ~ ' set tblproperties (' ~ features | join(', ') ~ ')') -%}
        {%- endif -%}
        {%- if additions -%}
            {%- do run_query('alter table ' ~ target_relation ~ ' add columns (' ~ additions | join(', ') ~ ')') -%}
        {%- endif -%}
        {%- for statement in widenings -%}
            {%- do run_query(statement) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(dbt.default__process_schema_changes(on_schema_change, source_relation, target_relation)) }}
{% endmacro %}
