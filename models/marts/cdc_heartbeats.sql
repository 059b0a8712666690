{{ config(materialized='view') }}

-- Heartbeats of every source with their lag: how long after the source wrote them they were landed.
select
    event_id,
    source_format,
    source_name,
    topic,
    kafka_partition,
    source_db_type,
    source_database,
    event_ts,
    ingested_at,
    unix_micros(ingested_at) / 1e6 - unix_micros(event_ts) / 1e6 as lag_seconds
from {{ ref('cdc_events') }}
where op = 'heartbeat'
