{#
    Typed views no model file defines (cdc_typed_views, README "The estate: routes, ..."): a source table no
    typed model selects and no route takes, or a route without its models, gets the views cdc-scaffold would
    write for it, created by the run that first sees its columns and again when they change.
#}

{#
    The base name cdc-scaffold gives a table's models (cdc_lakehouse/typed_model_names.py, model_base_name): each part
    lower-case [a-z0-9_] (40 characters at most), no_database for a null database, `__<format>` when
    `multi_stream` (SQL) says the table comes from more than one format, the settings' prefix and suffix. A
    name with characters outside ASCII gets a hash of it (cdc-scaffold transliterates it too: it keeps this
    name when it writes the table's models).
#}
{% macro cdc_typed_view_base_name(relation, multi_stream) -%}
    {%- set settings = cdc_typed_tables_config() -%}
    concat(
        {{ cdc_sql_string(settings.get('name_prefix') or '') }},
        concat_ws(
            '__',
            {{ cdc_view_name_part('coalesce(' ~ relation ~ ".source_database, 'no_database')") }},
            {{ cdc_view_name_part(relation ~ '.source_schema') }},
            {{ cdc_view_name_part(relation ~ '.source_table') }},
            if({{ multi_stream }}, {{ cdc_view_name_part(relation ~ '.source_format') }}, null)
        ),
        {{ cdc_sql_string(settings.get('name_suffix') or '') }}
    )
{%- endmacro %}


{% macro cdc_view_name_part(name) -%}
    if(
        {{ name }} is null,
        null,
        concat(
            coalesce(nullif(regexp_replace(substr(regexp_replace(regexp_replace(
                regexp_replace(lower({{ name }}), '[^a-z0-9_]', '_'), '_+', '_'), '^_|_$', ''), 1, 40), '_$', ''), ''),
                'unnamed'),
            if({{ name }} rlike '[^\\x00-\\x7f]', concat('_', substr(sha2({{ name }}, 256), 1, 6)), '')
        )
    )
{%- endmacro %}


{#
    The post-hook of cdc_typed_views: the views of the rows it appended in this batch. Names from message
    content reach SQL only as string literals and quoted identifiers.
#}
{% macro cdc_create_typed_views() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set batch = cdc_batch() -%}
    {%- set created = run_query(
        'select * from ' ~ this ~ ' where cdc_batch_id = ' ~ batch.batch_id ~ ' order by view_name'
    ).rows -%}
    {%- if created | length == 0 -%}
        {{ return('') }}
    {%- endif -%}
    {%- set columns_of = cdc_typed_columns_of_views(batch) -%}
    {%- for view in created -%}
        {%- if view['route_name'] is not none -%}
            {%- set history_filter = cdc_route_filter('versions', view['route_name']) -%}
        {%- else -%}
            {%- set history_filter = cdc_source_table_filter(
                'versions', view['source_database'], view['source_table'], view['source_format'],
                view['source_schema']
            ) -%}
        {%- endif -%}
        {%- set history = api.Relation.create(
            database=this.database, schema=this.schema, identifier=view['view_name'] ~ '__history'
        ) -%}
        {%- set current = api.Relation.create(
            database=this.database, schema=this.schema, identifier=view['view_name'] ~ '__current'
        ) -%}
        {%- call statement('typed_history_view') -%}
            create or replace view {{ history }} as
            select
            {%- for column in cdc_typed_table_metadata_columns() %}
                {{ history_chain_id('versions') if column == 'chain_id' else 'versions.' ~ column }} as {{ column }}
                {{- ',' if not loop.last }}
            {%- endfor %}
                {{- cdc_typed_value_columns('versions', columns_of.get(view['view_name'], [])) }}
            from {{ ref('cdc_history') }} as versions
            where {{ history_filter }}
        {%- endcall -%}
        {%- call statement('typed_current_view') -%}
            create or replace view {{ current }} as
            select typed_versions.*
            from {{ history }} as typed_versions
            where typed_versions.is_current and not typed_versions.is_deleted
            {{ cdc_route_current_rows('typed_versions', view['route_name']) if view['route_name'] is not none }}
        {%- endcall -%}
    {%- endfor -%}
    {{ return('') }}
{% endmacro %}


{#
    The typed columns of each view pair cdc_typed_views appended in the batch, by view name, from one query
    of cdc_table_columns (a first run may create thousands).
#}
{% macro cdc_typed_columns_of_views(batch) %}
    {%- set routes = cdc_typed_tables_config().get('routes') or [] -%}
    {%- set query -%}
        select
            typed_views.view_name,
            table_columns.column_name,
            table_columns.spark_type,
            table_columns.parse_rule,
            table_columns.column_position,
            table_columns.last_seen_at
        from {{ this }} as typed_views
        inner join {{ ref('cdc_table_columns') }} as table_columns
            on
                (
                    typed_views.route_name is null
                    and typed_views.source_format = table_columns.source_format
                    and typed_views.source_database <=> table_columns.source_database
                    and typed_views.source_schema <=> table_columns.source_schema
                    and typed_views.source_table = table_columns.source_table
                )
                {%- for route in routes %}
                    or (
                        typed_views.route_name = {{ cdc_sql_string(route['name']) }}
                        and {{ cdc_route_table_predicate('table_columns', route['name']) }}
                    )
                {%- endfor %}
        where typed_views.cdc_batch_id = {{ batch.batch_id }}
        order by typed_views.view_name, table_columns.last_seen_at desc, table_columns.column_position
    {%- endset -%}
    {%- set rows_of = {} -%}
    {%- for row in run_query(query).rows -%}
        {%- do rows_of.setdefault(row['view_name'], []).append(row) -%}
    {%- endfor -%}
    {%- set columns_of = {} -%}
    {%- for view_name, rows in rows_of.items() -%}
        {%- do columns_of.update({view_name: cdc_typed_columns_of(rows)}) -%}
    {%- endfor -%}
    {{ return(columns_of) }}
{% endmacro %}


{#
    A predicate: the relation's tables (columns source_format, source_database, source_schema, source_table)
    are those no typed model of the project selects (its meta cdc_source_table).
#}
{% macro cdc_not_typed_by_a_model(relation) -%}
    {%- set typed = [] -%}
    {%- for node in cdc_typed_model_nodes() -%}
        {%- set source_table = node.config.meta.get('cdc_source_table') -%}
        {%- if source_table -%}
            {%- do typed.append('(' ~ cdc_source_table_filter(
                relation, source_table.get('source_database'), source_table.get('source_table'),
                source_table.get('source_format'), source_table.get('source_schema')
            ) ~ ')') -%}
        {%- endif -%}
    {%- endfor -%}
    {{ 'not (' ~ typed | join(' or ') ~ ')' if typed else 'true' }}
{%- endmacro %}


{# The project's typed models (tag cdc_typed_table: a table's or a route's history model). #}
{% macro cdc_typed_model_nodes() %}
    {%- set nodes = [] -%}
    {#- None while dbt parses; a unit test's graph has none. -#}
    {%- if execute -%}
        {%- for node in (graph.get('nodes') or {}).values()
            if node.resource_type == 'model' and 'cdc_typed_table' in node.tags -%}
            {%- do nodes.append(node) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(nodes) }}
{% endmacro %}


{# The base names of the project's typed models (their history model's name less __history). #}
{% macro cdc_typed_model_bases() %}
    {%- set bases = [] -%}
    {%- for node in cdc_typed_model_nodes() -%}
        {%- do bases.append(node.name | replace('__history', '')) -%}
    {%- endfor -%}
    {{ return(bases) }}
{% endmacro %}


{# The routes whose models the project has (a typed model's meta cdc_route). #}
{% macro cdc_routes_with_models() %}
    {%- set routes = [] -%}
    {%- for node in cdc_typed_model_nodes() -%}
        {%- if node.config.meta.get('cdc_route') -%}
            {%- do routes.append(node.config.meta.get('cdc_route')) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(routes) }}
{% endmacro %}


{#
    A predicate: one of the settings' routes takes the relation's tables (a pattern of source_name, which
    cdc_table_columns does not have, matches any).
#}
{% macro cdc_routed(relation) -%}
    {%- set routed = [] -%}
    {%- for route in cdc_typed_tables_config().get('routes') or [] -%}
        {%- do routed.append('(' ~ cdc_route_table_predicate(relation, route['name']) ~ ')') -%}
    {%- endfor -%}
    {{ routed | join(' or ') if routed else 'false' }}
{%- endmacro %}


{# A route's patterns as a predicate on a relation of cdc_table_columns' source columns. #}
{% macro cdc_route_table_predicate(relation, name) -%}
    {{ cdc_match_predicate(
        relation, cdc_route(name)['match'], ['source_format', 'source_database', 'source_schema', 'source_table']
    ) }}
{%- endmacro %}


{# Whether the settings' include and exclude patterns select the relation's tables (database.[schema.]table). #}
{% macro cdc_selected_by_settings(relation) -%}
    {%- set settings = cdc_typed_tables_config() -%}
    {%- set name = "concat_ws('.', coalesce(" ~ relation ~ ".source_database, ''), " ~ relation ~ '.source_schema, '
        ~ relation ~ '.source_table)' -%}
    {%- set conditions = [] -%}
    {%- if settings.get('include') -%}
        {%- set included = [] -%}
        {%- for pattern in settings['include'] -%}
            {%- do included.append(name ~ ' rlike ' ~ cdc_sql_string('^(?:' ~ pattern ~ ')$')) -%}
        {%- endfor -%}
        {%- do conditions.append('(' ~ included | join(' or ') ~ ')') -%}
    {%- endif -%}
    {%- for pattern in settings.get('exclude') or [] -%}
        {%- do conditions.append('not ' ~ name ~ ' rlike ' ~ cdc_sql_string('^(?:' ~ pattern ~ ')$')) -%}
    {%- endfor -%}
    {{ conditions | join(' and ') if conditions else 'true' }}
{%- endmacro %}
