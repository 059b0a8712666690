{{
    config(
        incremental_strategy='append',
        post_hook="{{ cdc_create_typed_views() }}"
    )
}}
-- depends_on: {{ ref('cdc_history') }}
{%- set batch = cdc_batch() %}
{%- set settings = cdc_typed_tables_config() %}
{%- set prefix, suffix = settings.get('name_prefix') or '', settings.get('name_suffix') or '' %}
{%- set routes_with_models = cdc_routes_with_models() %}
{%- set routes_without_models = [] %}
{%- for route in settings.get('routes') or [] if route['name'] not in routes_with_models %}
    {%- do routes_without_models.append(route['name']) %}
{%- endfor %}

{#
    The typed views no model file defines, one row each time the pipeline creates a pair (again): a source
    table that no typed model selects, no route takes and the settings select (include, exclude), or a route
    of the settings without its models, whose columns (or those of one of its tables) were first seen or
    retyped in the batch. The post-hook creates <view_name>__history and <view_name>__current in this
    schema, as cdc-scaffold's models are; cdc-scaffold later names a table's models after its views here
    (README, "The estate: routes, ...").
#}

with

changed_tables as (
    select distinct
        table_columns.source_format,
        table_columns.source_database,
        table_columns.source_schema,
        table_columns.source_table
    from {{ ref('cdc_table_columns') }} as table_columns
    where {{ cdc_in_batch(batch, 'table_columns.typing_changed_in_batch') }}
),

untyped_tables as (
    select
        cast(null as string) as route_name,
        changed_tables.source_format,
        changed_tables.source_database,
        changed_tables.source_schema,
        changed_tables.source_table,
        {{ cdc_typed_view_base_name('changed_tables') }} as view_name
    from changed_tables
    where
        not ({{ cdc_routed('changed_tables') }})
        and {{ cdc_selected_by_settings('changed_tables') }}
        and {{ cdc_not_typed_by_a_model('changed_tables') }}
),

-- Every route without its models, once, when one of its tables changed.
routes_without_models as (
    select
        routes.route_name,
        cast(null as string) as source_format,
        cast(null as string) as source_database,
        cast(null as string) as source_schema,
        cast(null as string) as source_table,
        concat({{ cdc_sql_string(prefix) }}, routes.route_name, {{ cdc_sql_string(suffix) }}) as view_name
    from (
        {%- for route in routes_without_models %}
            select distinct {{ cdc_sql_string(route) }} as route_name
            from changed_tables
            where {{ cdc_route_table_predicate('changed_tables', route) }}
            {{ 'union all' if not loop.last }}
        {%- else %}
            select cast(null as string) as route_name
            where false
        {%- endfor %}
    ) as routes
)

select
    typed_views.*,
    {{ cdc_batch_id(batch) }} as cdc_batch_id
from (
    select * from untyped_tables
    union all
    select * from routes_without_models
) as typed_views
