{# The columns of cdc_events, in contract order; every per-format events model yields them. #}
{% macro cdc_event_columns() -%}
    {{ return([
        'event_id', 'source_format', 'topic', 'kafka_partition', 'kafka_offset', 'row_index',
        'source_db_type', 'source_database', 'source_schema', 'source_table', 'op',
        'before', 'after', 'column_types', 'primary_key', 'event_ts', 'source_seq',
        'source_position', 'ddl_sql', 'ingested_at'
    ]) }}
{%- endmacro %}
