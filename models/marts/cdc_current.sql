{{ config(materialized='view') }}

-- The open, non-deleted version of every key: an SCD1 view of every source table.
select
    source_format,
    source_name,
    source_task,
    source_time_zone,
    source_database,
    source_schema,
    source_table,
    pk,
    previous_pk,
    row,
    valid_from,
    valid_to,
    is_current,
    is_deleted,
    op,
    source_seq,
    event_order,
    row_index,
    event_id,
    scd_id,
    ingested_at
from {{ ref('cdc_history') }}
where is_current and not is_deleted
