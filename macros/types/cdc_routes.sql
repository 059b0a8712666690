{#
    The deployment's typed tables beyond one per source table (dbt_project.yml vars.cdc_typed_tables, README
    "Typed tables and querying"): routes, each one typed table of every source table its `match` patterns
    select (shards as one), and declared primary keys. cdc_lakehouse/typed_table_config.py reads the same
    settings for cdc-scaffold and cdc-build and checks them.
    A `match` maps some of source_format, source_name, source_database, source_schema and source_table to a
    regular expression the whole name matches (Java's syntax, as Spark's rlike reads it); a name left out
    matches any, a null name (a vendor's null database) only a left-out one.
#}

{% macro cdc_typed_tables_config() %}
    {{ return(var('cdc_typed_tables', none) or {}) }}
{% endmacro %}


{% macro cdc_route(name) %}
    {%- for route in cdc_typed_tables_config().get('routes') or [] -%}
        {%- if route['name'] == name -%}
            {{ return(route) }}
        {%- endif -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("no route named " ~ name ~ " in vars cdc_typed_tables.routes") }}
{% endmacro %}


{#
    A predicate, never null: the relation's source columns (unqualified when relation is none) match each
    pattern of `match`; `columns` limits it to the columns a relation has (cdc_table_columns has no
    source_name).
#}
{% macro cdc_match_predicate(relation, match, columns=none) -%}
    {%- set prefix = '' if relation is none else relation ~ '.' -%}
    {%- set conditions = [] -%}
    {%- for column, pattern in (match or {}).items() | sort -%}
        {%- if column not in cdc_match_columns() -%}
            {{ exceptions.raise_compiler_error(
                "cdc_typed_tables: a match names " ~ column ~ "; expected some of " ~ cdc_match_columns() | join(', ')
            ) }}
        {%- endif -%}
        {%- if columns is none or column in columns -%}
            {%- do conditions.append(
                'coalesce(' ~ prefix ~ column ~ ' rlike ' ~ cdc_sql_string('^(?:' ~ pattern ~ ')$') ~ ', false)'
            ) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ conditions | join('\n    and ') if conditions else 'true' }}
{%- endmacro %}


{% macro cdc_match_columns() %}
    {{ return(['source_format', 'source_name', 'source_database', 'source_schema', 'source_table']) }}
{% endmacro %}


{# The versions of a route's source tables: a predicate on a relation of cdc_history's columns. #}
{% macro cdc_route_filter(relation, name) -%}
    {{ cdc_match_predicate(relation, cdc_route(name)['match']) }}
{%- endmacro %}


{#
    A route's typed columns, each as ", <typed value> as <column>" of the relation's row map: the union of its
    source tables' columns, each typed by the most recently seen mapping in any of them.
#}
{% macro cdc_route_typed_columns(relation, name) %}
    {{- cdc_typed_value_columns(relation, cdc_typed_columns_where(cdc_route_table_predicate(none, name))) }}
{% endmacro %}


{#
    The rows of a route's current view among the open live versions of its history view: every one when its
    key is per shard (the default: a key of each source table, as cdc_history keys it); with `key: global`,
    one per pk across the shards, the newest version by valid_from (an untimed one last), then by source
    name, database, schema and table, the greatest first.
#}
{% macro cdc_route_current_rows(relation, name) -%}
    {%- set key = cdc_route(name).get('key', 'per_shard') -%}
    {%- if key == 'global' %}
qualify row_number() over (
    partition by {{ relation }}.pk
    order by
        {{ relation }}.valid_from desc nulls last,
        {{ relation }}.source_name desc,
        {{ relation }}.source_database desc,
        {{ relation }}.source_schema desc,
        {{ relation }}.source_table desc
) = 1
    {%- elif key != 'per_shard' -%}
        {{ exceptions.raise_compiler_error("route " ~ name ~ ": key is per_shard or global, not " ~ key) }}
    {%- endif -%}
{%- endmacro %}


{#
    The key columns of a relation's events: a primary key the deployment declares for their table (a route's
    `primary_key`, or one of cdc_typed_tables.primary_keys), else the vendor's (`primary_key`).
#}
{% macro cdc_declared_primary_key(relation) -%}
    {%- set config = cdc_typed_tables_config() -%}
    {%- set declarations = [] -%}
    {%- for declared in (config.get('routes') or []) + (config.get('primary_keys') or []) -%}
        {%- if declared.get('primary_key') -%}
            {%- do declarations.append(declared) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if declarations -%}
        case
            {%- for declared in declarations %}
            when {{ cdc_match_predicate(relation, declared['match']) }}
                then array({% for column in declared['primary_key'] %}{{ cdc_sql_string(column) }}{{ ', ' if not loop.last }}{% endfor %})
            {%- endfor %}
            else {{ relation }}.primary_key
        end
    {%- else -%}
        {{ relation }}.primary_key
    {%- endif -%}
{%- endmacro %}
