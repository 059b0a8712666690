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

-- How many formats each changed table comes from: cdc-scaffold names a table of several by its format.
table_formats as (
    select
        table_columns.source_database,
        table_columns.source_schema,
        table_columns.source_table,
        count(distinct table_columns.source_format) as formats
    from {{ ref('cdc_table_columns') }} as table_columns
    left semi join changed_tables
        on
            table_columns.source_database <=> changed_tables.source_database
            and table_columns.source_schema <=> changed_tables.source_schema
            and table_columns.source_table = changed_tables.source_table
    group by table_columns.source_database, table_columns.source_schema, table_columns.source_table
),

untyped_tables as (
    select
        changed_tables.source_format,
        changed_tables.source_database,
        changed_tables.source_schema,
        changed_tables.source_table,
        {{ cdc_typed_view_base_name('changed_tables', 'table_formats.formats > 1') }} as base_name
    from changed_tables
    inner join table_formats
        on
            changed_tables.source_database <=> table_formats.source_database
            and changed_tables.source_schema <=> table_formats.source_schema
            and changed_tables.source_table = table_formats.source_table
    where
        not ({{ cdc_routed('changed_tables') }})
        and {{ cdc_selected_by_settings('changed_tables') }}
        and {{ cdc_not_typed_by_a_model('changed_tables') }}
),

earlier_views as (
    {%- if is_incremental() %}
        select
            earlier.source_format,
            earlier.source_database,
            earlier.source_schema,
            earlier.source_table,
            earlier.view_name
        from {{ this }} as earlier
        where earlier.route_name is null
    {%- else %}
        select
            cast(null as string) as source_format,
            cast(null as string) as source_database,
            cast(null as string) as source_schema,
            cast(null as string) as source_table,
            cast(null as string) as view_name
        where false
    {%- endif %}
),

-- A table keeps the name an earlier batch gave its views; a new name another table (or model) has, or
-- shares with another new table (names that differ in case or punctuation), gets a hash of the table.
named_tables as (
    select distinct
        cast(null as string) as route_name,
        untyped_tables.source_format,
        untyped_tables.source_database,
        untyped_tables.source_schema,
        untyped_tables.source_table,
        coalesce(
            own_name.view_name,
            if(
                taken_name.view_name is not null
                or count(*) over (partition by untyped_tables.base_name) > 1
                {%- for base in cdc_typed_model_bases() %}
                    or untyped_tables.base_name = {{ cdc_sql_string(base) }}
                {%- endfor %},
                concat(untyped_tables.base_name, '_', substr(sha2(to_json(named_struct(
                    'format', untyped_tables.source_format,
                    'database', untyped_tables.source_database,
                    'schema', untyped_tables.source_schema,
                    'table', untyped_tables.source_table
                )), 256), 1, 6)),
                untyped_tables.base_name
            )
        ) as view_name
    from untyped_tables
    left join earlier_views as own_name
        on
            untyped_tables.source_format = own_name.source_format
            and untyped_tables.source_database <=> own_name.source_database
            and untyped_tables.source_schema <=> own_name.source_schema
            and untyped_tables.source_table = own_name.source_table
    left join (select distinct earlier_views.view_name from earlier_views) as taken_name
        on untyped_tables.base_name = taken_name.view_name
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
    select * from named_tables
    union all
    select * from routes_without_models
) as typed_views
