{# The columns of cdc_events, in contract order; every per-format events model yields them. #}
{% macro cdc_event_columns() -%}
    {{ return([
        'event_id', 'source_format', 'source_name', 'source_task', 'source_time_zone', 'topic', 'kafka_partition',
        'kafka_offset', 'row_index', 'source_db_type', 'source_database', 'source_schema', 'source_table', 'op',
        'before', 'after', 'column_types', 'row_columns', 'primary_key', 'event_ts', 'source_seq', 'event_order',
        'source_position', 'ddl_sql', 'ingested_at'
    ]) }}
{%- endmacro %}


{#
    A format's order of its changes: the given numbers compared left to right (an array sorts
    lexicographically). Each format lists its vendor sequence and tie-breaks, see "Order and identity per
    vendor" in the README; every model and test that orders a key's versions uses `cdc_version_order`.
#}
{% macro event_order(parts) -%}
    array(
        {%- for part in parts %}
            cast({{ part }} as decimal(38, 0)){% if not loop.last %},{% endif %}
        {%- endfor %}
    )
{%- endmacro %}


{#
    The order of versions of one key: the source's replication task (a re-created task's changes follow the
    earlier task's, whose sequence it starts anew), the format's event order, then the event id for a total
    order.
#}
{% macro cdc_version_order(relation) -%}
    {{ relation }}.source_task, {{ relation }}.event_order, {{ relation }}.event_id
{%- endmacro %}


{#
    What identifies one change at its source: the same source stream and task, table, vendor position and
    sequence, row, operation, source event time, images and DDL text are the same change, whatever topic and
    offset it was landed at. Images are compared as their entries sorted by column name, so neither JSON key order
    nor map serialisation matters; two distinct changes sharing a vendor position (a Canal batch id, a
    MongoDB transaction's clusterTime) differ in their images, DDL text or event time and are both kept.
#}
{% macro source_change_identity(relation) -%}
    {%- set columns = [
        'source_format', 'source_name', 'source_task', 'source_database', 'source_schema', 'source_table',
        'source_position', 'source_seq', 'row_index', 'op', 'event_ts', 'ddl_sql'
    ] -%}
    {%- set expressions = [] -%}
    {%- for column in columns -%}
        {%- do expressions.append(relation ~ '.' ~ column) -%}
    {%- endfor -%}
    {%- for image in ['before', 'after'] -%}
        {%- do expressions.append('sort_array(map_entries(' ~ relation ~ '.' ~ image ~ '))') -%}
    {%- endfor -%}
    {{ return(expressions) }}
{%- endmacro %}
