{{ config(materialized='view') }}

-- Every DDL statement and truncate of every source, in source order; the statement text is never executed.
select
    event_id,
    source_format,
    source_name,
    source_task,
    topic,
    kafka_partition,
    kafka_offset,
    source_db_type,
    source_database,
    source_schema,
    source_table,
    op,
    ddl_sql,
    event_ts,
    source_seq,
    event_order,
    source_position,
    ingested_at
from {{ ref('cdc_events') }}
where op in ('ddl', 't')
