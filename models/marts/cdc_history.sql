{{
    config(
        incremental_strategy='merge',
        unique_key='scd_id',
        on_schema_change='fail',
        tblproperties={'delta.enableDeletionVectors': 'true'},
        cluster_by=['source_table', 'source_database']
    )
}}

{#
    SCD Type 2 history built from the change log: one row per version of a source row.

    Each run rebuilds the whole version chain of every key touched by the key steps of the batches it has
    not read (cdc_batches), from all of that key's events, and merges the versions by scd_id.
    A late or out-of-order event is therefore stitched into its chain like any other. The set of versions
    of a key only grows as events arrive, so an upsert never leaves a stale version behind.
    Deletion vectors let the merge mark the replaced versions instead of rewriting every file that holds
    one: the touched keys are spread over the whole table. cdc-maintain clusters the table by source table
    (cluster_by, macro cdc_cluster_tables): a typed view reads the files of its own table.
#}
{%- set batch = cdc_batch() %}

with

all_key_steps as (
    select * from {{ ref('int_cdc_history__key_steps') }}
),

truncations as (
    select
        source_format,
        source_name,
        source_time_zone,
        source_database,
        source_schema,
        source_table,
        op,
        event_id,
        source_seq,
        event_order,
        row_index,
        kafka_partition,
        kafka_offset,
        event_ts,
        ingested_at,
        cdc_batch_id
    from {{ ref('cdc_events') }}
    where op = 't'
),

{% if is_incremental() %}
    -- The touched keys are few: broadcasting them keeps every pass over all steps free of shuffles, so
    -- an incremental run costs a scan of the steps plus work on the touched chains only.
    new_truncations as (
        select *
        from truncations
        where {{ cdc_in_batch(batch, 'truncations.cdc_batch_id') }}
    ),

    touched_chains as (
        select all_key_steps.chain_id
        from all_key_steps
        where {{ cdc_in_batch(batch, 'all_key_steps.cdc_batch_id') }}
        union
        -- A new truncate touches every key of its table.
        select /*+ broadcast(new_truncations) */ all_key_steps.chain_id
        from all_key_steps
        left semi join new_truncations
            on {{ same_source_table('all_key_steps', 'new_truncations') }}
    ),

    key_steps as (
        select /*+ broadcast(touched_chains) */ all_key_steps.*
        from all_key_steps
        left semi join touched_chains
            on all_key_steps.chain_id = touched_chains.chain_id
    ),
{% else %}
    key_steps as (
        select * from all_key_steps
    ),
{% endif %}

table_keys as (
    select distinct
        chain_id,
        source_format,
        source_name,
        source_database,
        source_schema,
        source_table,
        pk
    from key_steps
),

truncation_steps as (
    select
        table_keys.chain_id,
        table_keys.source_format,
        table_keys.source_name,
        truncations.source_time_zone,
        table_keys.source_database,
        table_keys.source_schema,
        table_keys.source_table,
        table_keys.pk,
        cast(null as string) as previous_pk,
        'truncate' as step_kind,
        cast(null as map <string, string>) as image,
        truncations.op,
        truncations.event_id,
        truncations.source_seq,
        truncations.event_order,
        truncations.row_index,
        truncations.kafka_partition,
        truncations.kafka_offset,
        truncations.event_ts,
        truncations.ingested_at,
        truncations.cdc_batch_id
    from table_keys
    inner join truncations
        on {{ same_source_table('table_keys', 'truncations') }}
),

chain_steps as (
    select * from key_steps
    union all
    select * from truncation_steps
),

ordered_steps as (
    select
        chain_steps.*,
        lag(chain_steps.step_kind) over key_chain as previous_step_kind
    from chain_steps
    window key_chain as (partition by chain_steps.chain_id order by {{ cdc_version_order('chain_steps') }})
),

-- A truncate deletes the rows that exist at that point: it closes a live version only, not a key that is
-- deleted already (or truncated already, or not inserted yet).
live_steps as (
    select ordered_steps.*
    from ordered_steps
    where
        ordered_steps.step_kind != 'truncate'
        or coalesce(ordered_steps.previous_step_kind not in ('delete', 'truncate'), false)
),

versions as (
    select
        live_steps.*,
        row_number() over key_chain as version_number,
        -- An `open` step starts a new run of images; updates and deletes fill in from the run.
        count_if(live_steps.step_kind = 'open') over key_chain as image_run
    from live_steps
    window key_chain as (
        partition by live_steps.chain_id
        order by {{ cdc_version_order('live_steps') }}
        rows between unbounded preceding and current row
    )
),

run_columns as (
    select distinct
        versions.chain_id,
        versions.image_run,
        image_column.column_name
    from versions
        lateral view explode(map_keys(versions.image)) image_column as column_name
),

version_cells as (
    select
        versions.chain_id,
        versions.version_number,
        run_columns.column_name,
        -- The value this version carries for the column, if it carries the column at all.
        last(
            if(
                map_contains_key(versions.image, run_columns.column_name),
                named_struct('value', versions.image[run_columns.column_name]),
                null
            ),
            true
        ) over (
            partition by versions.chain_id, versions.image_run, run_columns.column_name
            order by versions.version_number
            rows between unbounded preceding and current row
        ) as cell
    from versions
    inner join run_columns
        on
            versions.chain_id = run_columns.chain_id
            and versions.image_run = run_columns.image_run
),

version_rows as (
    select
        version_cells.chain_id,
        version_cells.version_number,
        -- Columns in name order: a version's row reads the same whichever plan collected its cells.
        map_from_entries(sort_array(collect_list(struct(version_cells.column_name, version_cells.cell.value))))
            as row
    from version_cells
    where version_cells.cell is not null
    group by version_cells.chain_id, version_cells.version_number
),

stitched_versions as (
    select
        versions.*,
        coalesce(version_rows.row, map()) as row,
        lead(versions.event_ts) over key_chain as next_valid_from,
        lead(versions.version_number) over key_chain is null as is_last
    from versions
    left join version_rows
        on
            versions.chain_id = version_rows.chain_id
            and versions.version_number = version_rows.version_number
    window key_chain as (partition by versions.chain_id order by versions.version_number)
)

select
    source_format,
    source_name,
    source_time_zone,
    source_database,
    source_schema,
    source_table,
    pk,
    previous_pk,
    row,
    event_ts as valid_from,
    next_valid_from as valid_to,
    is_last as is_current,
    step_kind in ('delete', 'truncate') as is_deleted,
    op,
    source_seq,
    event_order,
    row_index,
    event_id,
    sha2(concat_ws('/', event_id, pk), 256) as scd_id,
    ingested_at,
    {{ cdc_batch_id(batch) }} as cdc_batch_id
from stitched_versions
