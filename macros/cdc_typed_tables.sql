{#
    Helpers of the typed tables per source table (models/tables/, written by cdc-scaffold), incremental Delta
    tables: a table's history model merges, by scd_id, the versions cdc_history wrote in the batches it has
    not read, with one typed column per source column (cdc_table_columns, read at compile time); its current
    model merges the open versions of those by chain_id, deleting a key whose open version is a delete.
    A column added by DDL appears once an event carries it (on_schema_change append_new_columns), and
    versions from before hold NULL in it; a widened type widens the stored column; another type change
    keeps the stored type (cdc_typed_columns, macro cdc_typed_column_mismatches). Zone-less
    timestamp text is read in the version's `source_time_zone`.
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
            {{ cdc_source_table_filter(none, database, table, source_format, schema) }}
        order by last_seen_at desc, column_position
    {%- endset -%}
    {%- set rows = run_query(query).rows -%}
    {#- One column per name (Spark names are case-insensitive): the most recently seen mapping wins. -#}
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


{#
    The typed columns of one source table, each as ", <typed value> as <column>" of the relation's row map.
    In an incremental run, a column whose type changed to one its stored type cannot widen to (for example
    varchar to int) is cast to the stored type, so the table's merge never fails on it; the test
    cdc_typed_rows_hold names it. A widening change is applied to the stored column before
    the merge (process_schema_changes).
#}
{% macro cdc_typed_columns(relation, database, table, source_format=none, schema=none) %}
    {#- The materialization runs none of the SQL of a model with nothing to read: no lookups to render it. -#}
    {%- if cdc_batch().nothing_to_read -%}
        {{ return('') }}
    {%- endif -%}
    {%- set stored = cdc_stored_column_types() -%}
    {%- for column in cdc_table_typed_columns(database, table, source_format, schema) %},
    {%- set value = cdc_typed_value(
        relation ~ '.row[' ~ cdc_sql_string(column.name) ~ ']', column.parse_rule, column.spark_type,
        time_zone=relation ~ '.source_time_zone'
    ) %}
    {%- set stored_type = stored.get(column.alias | lower) %}
    {%- if stored_type and stored_type != column.spark_type and not cdc_type_widens(stored_type, column.spark_type) %}
    cast({{ value }} as {{ stored_type }}) as {{ cdc_quoted_identifier(column.alias) }}
    {%- else %}
    {{ value }} as {{ cdc_quoted_identifier(column.alias) }}
    {%- endif %}
    {%- endfor %}
{% endmacro %}


{# The column types of the model's table, by lower-case name, in an incremental run; else none. #}
{% macro cdc_stored_column_types() %}
    {{ return(cdc_column_types(this) if execute and is_incremental() else {}) }}
{% endmacro %}


{# A relation's column types by lower-case name, as Spark writes them (decimal(38,10)); none if it is absent. #}
{% macro cdc_column_types(relation) %}
    {%- set types = {} -%}
    {%- for column in adapter.get_columns_in_relation(relation) -%}
        {%- do types.update({column.name | lower: column.data_type | lower | replace(' ', '')}) -%}
    {%- endfor -%}
    {{ return(types) }}
{% endmacro %}


{#
    The typed columns of a typed history's table whose stored type is not the type their source column
    maps to now (cdc_typed_columns casts their values to the stored type), as dicts (column_name,
    stored_type, source_type): read at compile time from the table's schema and cdc_table_columns, no row.
#}
{% macro cdc_typed_column_mismatches(relation, database, table, source_format=none, schema=none) %}
    {%- set mismatches = [] -%}
    {%- set stored = cdc_column_types(relation) if execute else {} -%}
    {%- for column in cdc_table_typed_columns(database, table, source_format, schema) -%}
        {%- set stored_type = stored.get(column.alias | lower) -%}
        {%- if stored_type and stored_type != column.spark_type | lower | replace(' ', '') -%}
            {%- do mismatches.append({
                'column_name': column.alias, 'stored_type': stored_type, 'source_type': column.spark_type
            }) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(mismatches) }}
{% endmacro %}


{# The table a generic test tests (its where-subquery aside), for what it reads at compile time; none at parse. #}
{% macro cdc_tested_relation() %}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set node = graph.nodes[model.attached_node or (model.depends_on.nodes | first)] -%}
    {{ return(api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias)) }}
{% endmacro %}


{#
    Whether Delta's type widening changes a column of Spark type `stored` to `wanted` in place: integral
    types up, integral types but bigint to double, integral types to a decimal with room for all their
    digits, a decimal to one with at least as many integer and fraction digits, float to double, date to
    timestamp_ntz (Delta Lake 4, "Type widening").
#}
{% macro cdc_type_widens(stored, wanted) %}
    {%- set integral_digits = {'tinyint': 3, 'smallint': 5, 'int': 10, 'bigint': 20} -%}
    {%- set stored = stored | lower | replace(' ', '') -%}
    {%- set wanted = wanted | lower | replace(' ', '') -%}
    {%- set stored_decimal = modules.re.fullmatch('decimal\\(([0-9]+),([0-9]+)\\)', stored) -%}
    {%- set wanted_decimal = modules.re.fullmatch('decimal\\(([0-9]+),([0-9]+)\\)', wanted) -%}
    {%- if stored in integral_digits and wanted in integral_digits -%}
        {{ return(integral_digits[wanted] > integral_digits[stored]) }}
    {%- elif stored in integral_digits and wanted == 'double' -%}
        {{ return(stored != 'bigint') }}
    {%- elif stored in integral_digits and wanted_decimal -%}
        {{ return(wanted_decimal.group(1) | int - wanted_decimal.group(2) | int >= integral_digits[stored]) }}
    {%- elif stored_decimal and wanted_decimal -%}
        {%- set more_digits = wanted_decimal.group(1) | int - stored_decimal.group(1) | int -%}
        {%- set more_scale = wanted_decimal.group(2) | int - stored_decimal.group(2) | int -%}
        {{ return(more_digits >= more_scale and more_scale >= 0 and (more_digits, more_scale) != (0, 0)) }}
    {%- endif -%}
    {{ return((stored, wanted) in [('float', 'double'), ('date', 'timestamp_ntz')]) }}
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
    is valid from its valid_from (included) to its valid_to (excluded), in source time. Works on cdc_history
    and on every typed history model.
        select * from {{ cdc_as_of(ref('shop__orders__huawei_drs_json__history'), "timestamp'2026-03-02 09:00:00'") }}
#}
{% macro cdc_as_of(relation, ts) -%}
    (
        select versions.*
        from {{ relation }} as versions
        where
            versions.valid_from <= {{ ts }}
            and (versions.valid_to is null or versions.valid_to > {{ ts }})
            and not versions.is_deleted
    )
{%- endmacro %}
