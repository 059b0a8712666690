{#
    Helpers of the typed views per source table (models/tables/, written by cdc-scaffold): a table's history
    view selects its versions from cdc_history with one typed column per source column (cdc_table_columns,
    read when the view is created); its current view, the open live versions of the history view. Every
    version is typed with the column's type now: a column added by DDL is NULL in the versions from before,
    a widened type reads every version wider, and a value that does not parse as the type is NULL (its text
    stays in cdc_history.row). Zone-less timestamp text is read in the version's `source_time_zone`.
#}

{# The metadata columns of a typed table; a source column with one of these names gets a suffix. #}
{% macro cdc_typed_table_metadata_columns() -%}
    {{ return(['source_format', 'source_name', 'source_database', 'source_schema', 'source_table', 'pk',
               'valid_from', 'valid_to', 'is_current', 'is_deleted', 'op', 'source_seq', 'scd_id', 'chain_id',
               'cdc_batch_id']) }}
{%- endmacro %}


{#
    The typed columns of one source table as a list of dicts (name, alias, spark_type, parse_rule),
    in column_position order. Empty while dbt parses (execute is false) and before cdc_table_columns
    exists (a first lint or compile of an empty warehouse).
#}
{% macro cdc_table_typed_columns(database, table, source_format=none, schema=none) %}
    {{ return(cdc_typed_columns_where(cdc_source_table_filter(none, database, table, source_format, schema))) }}
{% endmacro %}


{#
    The typed columns of the source tables cdc_table_columns rows matching `predicate` (SQL over its source
    columns) name: one column per name (Spark names are case-insensitive), typed by the most recently seen
    mapping of any of the tables, in column_position order.
#}
{% macro cdc_typed_columns_where(predicate) %}
    {%- set columns_relation = ref('cdc_table_columns') -%}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- if load_relation(columns_relation) is none -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set query -%}
        select column_name, spark_type, parse_rule, column_position, last_seen_at
        from {{ columns_relation }}
        where
            {{ predicate }}
        order by last_seen_at desc, column_position
    {%- endset -%}
    {{ return(cdc_typed_columns_of(run_query(query).rows)) }}
{% endmacro %}


{#
    Typed columns (dicts of name, alias, spark_type, parse_rule) of rows of cdc_table_columns, the most
    recently seen first: one per name, the first row's mapping, in column_position order.
#}
{% macro cdc_typed_columns_of(rows) %}
    {%- set by_name = {} -%}
    {%- for row in rows -%}
        {%- if row['column_name'] | lower not in by_name -%}
            {%- do by_name.update({row['column_name'] | lower: row}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set reserved = cdc_typed_table_metadata_columns() -%}
    {%- set columns = [] -%}
    {%- for row in by_name.values() | sort(attribute='column_position') -%}
        {%- set alias = row['column_name'] ~ ('__value' if row['column_name'] | lower in reserved else '') -%}
        {%- do columns.append({
            'name': row['column_name'], 'alias': alias,
            'spark_type': row['spark_type'], 'parse_rule': row['parse_rule']
        }) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}


{# The typed columns of one source table, each as ", <typed value> as <column>" of the relation's row map. #}
{% macro cdc_typed_columns(relation, database, table, source_format=none, schema=none) %}
    {{- cdc_typed_value_columns(relation, cdc_table_typed_columns(database, table, source_format, schema)) }}
{% endmacro %}


{# Typed columns (cdc_typed_columns_where's dicts), each as ", <typed value> as <column>" of the relation's row map. #}
{% macro cdc_typed_value_columns(relation, columns) %}
    {%- for column in columns %},
    {{ cdc_typed_value(
        relation ~ '.row[' ~ cdc_sql_string(column.name) ~ ']', column.parse_rule, column.spark_type,
        time_zone=relation ~ '.source_time_zone'
    ) }} as {{ cdc_quoted_identifier(column.alias) }}
    {%- endfor %}
{% endmacro %}


{#
    The rows of one source table: a predicate on the relation's source columns (unqualified when relation is
    none), its names as SQL strings. A database of none is the null database some vendors' messages carry;
    a schema or source format of none matches any.
#}
{% macro cdc_source_table_filter(relation, database, table, source_format=none, schema=none) -%}
    {%- set prefix = '' if relation is none else relation ~ '.' -%}
    {{ prefix }}source_database {{ 'is null' if database is none else '= ' ~ cdc_sql_string(database) }}
    and {{ prefix }}source_table = {{ cdc_sql_string(table) }}
    {%- if source_format is not none %}
        and {{ prefix }}source_format = {{ cdc_sql_string(source_format) }}
    {%- endif %}
    {%- if schema is not none %}
        and {{ prefix }}source_schema = {{ cdc_sql_string(schema) }}
    {%- endif %}
{%- endmacro %}


{#
    A history relation as it was at a point in time `ts` (SQL text of a timestamp, for example
    "timestamp'2026-03-02 09:00:00'"): the version of each key valid at ts, deleted keys left out. A version
    is valid from its valid_from (included) to its valid_to (excluded), in source time. A version without a
    valid_from (a full load's row, before any timed change of its key) is valid from the beginning; one
    without a valid_to ends with the history when it is the key's current version, and is no version of any
    time when it is not (only untimed versions followed it). Works on cdc_history and on every typed
    history model.
        select * from {{ cdc_as_of(ref('shop__orders__huawei_drs_json__history'), "timestamp'2026-03-02 09:00:00'") }}
#}
{% macro cdc_as_of(relation, ts) -%}
    (
        select versions.*
        from {{ relation }} as versions
        where
            coalesce(versions.valid_from <= {{ ts }}, true)
            and coalesce(versions.valid_to > {{ ts }}, versions.is_current)
            and not versions.is_deleted
    )
{%- endmacro %}
