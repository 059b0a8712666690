{#
    First cut of the SCD2 history: one version per row change of a keyed source row, ordered by
    (source_seq, row_index). Rebuilt in full on each run; the history issue makes it incremental and
    adds partial images, truncates, key changes and keyless tables.
#}
with

row_changes as (
    select
        event_id,
        source_format,
        source_database,
        source_schema,
        source_table,
        op,
        coalesce(after, before) as row,
        to_json(transform(primary_key, key_column -> coalesce(after, before)[key_column])) as pk,
        event_ts,
        source_seq,
        row_index,
        kafka_partition,
        kafka_offset
    from {{ ref('cdc_events') }}
    where op in ('c', 'u', 'd', 'r') and size(primary_key) > 0
),

versions as (
    select
        row_changes.*,
        lead(row_changes.event_ts) over key_versions as next_valid_from,
        lead(row_changes.event_id) over key_versions as next_event_id
    from row_changes
    window key_versions as (
        partition by source_format, source_database, source_schema, source_table, pk
        order by source_seq, row_index, kafka_partition, kafka_offset
    )
)

select
    source_format,
    source_database,
    source_schema,
    source_table,
    pk,
    row,
    event_ts as valid_from,
    next_valid_from as valid_to,
    next_event_id is null as is_current,
    op = 'd' as is_deleted,
    op,
    source_seq,
    row_index,
    event_id,
    sha2(concat_ws('/', event_id, pk), 256) as scd_id
from versions
