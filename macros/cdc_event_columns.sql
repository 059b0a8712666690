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
    row and operation on the same table is the same change, whatever offset it was landed at.
#}
{% macro source_change_identity_columns() -%}
    {{ return([
        'source_format', 'source_database', 'source_schema', 'source_table', 'source_position',
        'source_seq', 'row_index', 'op'
    ]) }}
{%- endmacro %}


{% macro source_change_identity(relation) -%}
    {%- for column in source_change_identity_columns() -%}
        {{ relation }}.{{ column }}{% if not loop.last %}, {% endif %}
    {%- endfor -%}
{%- endmacro %}
