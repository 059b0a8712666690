{#
    The key of a row image: JSON array text of its primary-key values in key order (e.g. ["104"]), or
    null when the table has no primary key or the image does not carry every key column.
#}
{% macro image_key(image, primary_key) %}
    if(
        size({{ primary_key }}) > 0
        and forall({{ primary_key }}, key_column -> map_contains_key({{ image }}, key_column)),
        to_json(transform({{ primary_key }}, key_column -> {{ image }}[key_column])),
        null
    )
{% endmacro %}


{# One id per version chain: a key of one table of one source. `relation` qualifies the columns. #}
{% macro history_chain_id(relation) %}
    sha2(to_json(named_struct(
        'format', {{ relation }}.source_format,
        'source', {{ relation }}.source_name,
        'database', {{ relation }}.source_database,
        'schema', {{ relation }}.source_schema,
        'table', {{ relation }}.source_table,
        'pk', {{ relation }}.pk
    )), 256)
{% endmacro %}


{# Both relations' rows come from the same table of the same source (schema and database may be null). #}
{% macro same_source_table(left, right) %}
    {{ left }}.source_format = {{ right }}.source_format
    and {{ left }}.source_name = {{ right }}.source_name
    and {{ left }}.source_database <=> {{ right }}.source_database
    and {{ left }}.source_schema <=> {{ right }}.source_schema
    and {{ left }}.source_table <=> {{ right }}.source_table
{% endmacro %}


{#
    One row per table of a replication task (cdc_task_tables, appended a few rows a task): its earliest
    first change and the batch that first found its full sync complete (null until then).
#}
{% macro summarized_task_tables(relation) %}
    select
        source_format,
        source_name,
        source_task,
        source_database,
        source_schema,
        source_table,
        min(first_event_ts) as first_event_ts,
        min(full_sync_completed_in_batch) as full_sync_completed_in_batch
    from {{ relation }}
    group by source_format, source_name, source_task, source_database, source_schema, source_table
{% endmacro %}
