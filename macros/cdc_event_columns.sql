{# The columns of cdc_events, in contract order; every per-format events model yields them. #}
{% macro cdc_event_columns() -%}
    {{ return([
        'event_id', 'source_format', 'topic', 'kafka_partition', 'kafka_offset', 'row_index',
        'source_db_type', 'source_database', 'source_schema', 'source_table', 'op',
        'before', 'after', 'column_types', 'primary_key', 'event_ts', 'source_seq',
        'source_position', 'ddl_sql', 'ingested_at'
    ]) }}
{%- endmacro %}


{#
    What identifies one change at its source, for vendors that give a position: the same position, sequence,
    row, operation and images on the same table in the same topic are the same change, whatever offset it
    was landed at. (Another topic is another stream, e.g. a second task: its copy is kept.)
    The images count because some positions are shared by several changes (a MongoDB transaction's
    clusterTime, a Canal batch id).
#}
{% macro source_change_identity(relation) -%}
    {%- set columns = [
        'source_format', 'topic', 'source_database', 'source_schema', 'source_table', 'source_position',
        'source_seq', 'row_index', 'op'
    ] -%}
    {%- set expressions = [] -%}
    {%- for column in columns -%}
        {%- do expressions.append(relation ~ '.' ~ column) -%}
    {%- endfor -%}
    {%- do expressions.append('to_json(array(' ~ relation ~ '.before, ' ~ relation ~ '.after))') -%}
    {{ return(expressions) }}
{%- endmacro %}
