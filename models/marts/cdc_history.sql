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
    A version's row is its step's image, and each column the image lacks keeps its value from the version
    before when the step keeps it: an update or delete whose message names the row's columns
    (`row_columns`) keeps those, one that names none keeps every column, an `open` step none. So a whole
    row image replaces, a partial one fills in, and a column dropped at the source is gone from then on.
    A re-created replication task (seed cdc_sources, `source_task`) continues its source's chains after
    the earlier tasks' changes; once its full sync is complete (cdc_task_tables), a key of an earlier task
    that the full sync did not send is closed as deleted when the new task began.
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
        source_task,
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

-- The tables a re-created task sent changes of, once its full sync is complete, with when the task began.
completed_task_tables as (
    select
        task_tables.*,
        min(task_tables.first_event_ts) over (
            partition by task_tables.source_format, task_tables.source_name, task_tables.source_task
        ) as task_started_at
    from ({{ summarized_task_tables(ref('cdc_task_tables')) }}) as task_tables
    where task_tables.full_sync_completed_in_batch is not null
),

{% if is_incremental() %}
    -- The touched keys are few: broadcasting them keeps every pass over all steps free of shuffles, so
    -- an incremental run costs a scan of the steps plus work on the touched chains only.
    new_truncations as (
        select *
        from truncations
        where {{ cdc_in_batch(batch, 'truncations.cdc_batch_id') }}
    ),

    newly_completed_task_tables as (
        select *
        from completed_task_tables
        where {{ cdc_in_batch(batch, 'completed_task_tables.full_sync_completed_in_batch') }}
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
        union
        -- A full sync just completed touches every key its table had in the source's earlier tasks.
        select /*+ broadcast(newly_completed_task_tables) */ all_key_steps.chain_id
        from all_key_steps
        left semi join newly_completed_task_tables
            on
                {{ same_source_table('all_key_steps', 'newly_completed_task_tables') }}
                and all_key_steps.source_task < newly_completed_task_tables.source_task
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

-- Each key: its table, the first task that changed it, and the tasks whose full sync sent it (snapshot rows).
chain_keys as (
    select
        chain_id,
        source_format,
        source_name,
        source_database,
        source_schema,
        source_table,
        pk,
        max(source_time_zone) as source_time_zone,
        min(source_task) as first_source_task,
        collect_set(if(op = 'r', source_task, null)) as restating_tasks
    from key_steps
    group by chain_id, source_format, source_name, source_database, source_schema, source_table, pk
),

truncation_steps as (
    select
        chain_keys.chain_id,
        chain_keys.source_format,
        chain_keys.source_name,
        truncations.source_task,
        truncations.source_time_zone,
        chain_keys.source_database,
        chain_keys.source_schema,
        chain_keys.source_table,
        chain_keys.pk,
        cast(null as string) as previous_pk,
        'truncate' as step_kind,
        cast(null as map <string, string>) as image,
        cast(null as array<string>) as row_columns,
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
    from chain_keys
    inner join truncations
        on {{ same_source_table('chain_keys', 'truncations') }}
),

-- A key of an earlier task that a completed full sync did not send was deleted while no task ran: it is
-- closed where the new task begins, before all of its changes (no event: the version's event_id is null).
task_close_steps as (
    select /*+ broadcast(completed_task_tables) */
        chain_keys.chain_id,
        chain_keys.source_format,
        chain_keys.source_name,
        completed_task_tables.source_task,
        chain_keys.source_time_zone,
        chain_keys.source_database,
        chain_keys.source_schema,
        chain_keys.source_table,
        chain_keys.pk,
        cast(null as string) as previous_pk,
        'truncate' as step_kind,
        cast(null as map <string, string>) as image,
        cast(null as array<string>) as row_columns,
        'd' as op,
        cast(null as string) as event_id,
        cast(null as decimal(38, 0)) as source_seq,
        cast(array() as array<decimal(38, 0)>) as event_order,
        cast(null as int) as row_index,
        cast(null as int) as kafka_partition,
        cast(null as bigint) as kafka_offset,
        completed_task_tables.task_started_at as event_ts,
        cast(null as timestamp) as ingested_at,
        completed_task_tables.full_sync_completed_in_batch as cdc_batch_id
    from chain_keys
    inner join completed_task_tables
        on
            {{ same_source_table('chain_keys', 'completed_task_tables') }}
            and chain_keys.first_source_task < completed_task_tables.source_task
    where not array_contains(chain_keys.restating_tasks, completed_task_tables.source_task)
),

chain_steps as (
    select * from key_steps
    union all
    select * from truncation_steps
    union all
    select * from task_close_steps
),

ordered_steps as (
    select
        chain_steps.*,
        lag(chain_steps.step_kind) over key_chain as previous_step_kind
    from chain_steps
    window key_chain as (partition by chain_steps.chain_id order by {{ cdc_version_order('chain_steps') }})
),

-- A truncate deletes the rows that exist at that point: it closes a live version only, not a key that is
-- deleted already (or truncated already, or not inserted yet). A task's close is one such step.
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
        row_number() over (
            partition by live_steps.chain_id order by {{ cdc_version_order('live_steps') }}
        ) as version_number
    from live_steps
),

chain_columns as (
    select distinct
        versions.chain_id,
        image_column.column_name
    from versions
        lateral view explode(map_keys(versions.image)) image_column as column_name
),

version_cells as (
    select
        versions.chain_id,
        versions.version_number,
        chain_columns.column_name,
        -- The newest version up to this one whose image carries the column, with its value, ...
        last(
            if(
                map_contains_key(versions.image, chain_columns.column_name),
                named_struct(
                    'version_number', versions.version_number,
                    'value', versions.image[chain_columns.column_name]
                ),
                null
            ),
            true
        ) over column_versions as carried,
        -- ... and the newest whose row has no such column: an `open` step's image is the whole row, and an
        -- update or delete whose message names the row's columns (row_columns) without it keeps it no more.
        max(
            if(
                not coalesce(map_contains_key(versions.image, chain_columns.column_name), false)
                and (
                    versions.step_kind = 'open'
                    or not coalesce(array_contains(versions.row_columns, chain_columns.column_name), true)
                ),
                versions.version_number,
                null
            )
        ) over column_versions as left_out_at
    from versions
    inner join chain_columns
        on versions.chain_id = chain_columns.chain_id
    window column_versions as (
        partition by versions.chain_id, chain_columns.column_name
        order by versions.version_number
        rows between unbounded preceding and current row
    )
),

version_rows as (
    select
        version_cells.chain_id,
        version_cells.version_number,
        -- Columns in name order: a version's row reads the same whichever plan collected its cells.
        map_from_entries(sort_array(collect_list(struct(version_cells.column_name, version_cells.carried.value))))
            as row
    from version_cells
    where version_cells.carried.version_number > coalesce(version_cells.left_out_at, 0)
    group by version_cells.chain_id, version_cells.version_number
),

stitched_versions as (
    select
        versions.*,
        coalesce(version_rows.row, map()) as row,
        -- A version without a source time (a full load's row) is valid from the newest source time before it
        -- in its chain, or from the beginning when there is none; every version ends where the next begins.
        last(versions.event_ts, true) over chain_so_far as valid_from,
        lead(versions.version_number) over key_chain is null as is_last,
        lead(versions.event_ts) over key_chain as next_event_ts
    from versions
    left join version_rows
        on
            versions.chain_id = version_rows.chain_id
            and versions.version_number = version_rows.version_number
    window
        key_chain as (partition by versions.chain_id order by versions.version_number),
        chain_so_far as (
            partition by versions.chain_id
            order by versions.version_number
            rows between unbounded preceding and current row
        )
)

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
    if(is_last, null, coalesce(next_event_ts, valid_from)) as valid_to,
    is_last as is_current,
    step_kind in ('delete', 'truncate') as is_deleted,
    op,
    source_seq,
    event_order,
    row_index,
    event_id,
    -- A task's close has no event: the task and the key's chain stand for it.
    sha2(concat_ws('/', coalesce(event_id, concat_ws(' ', 'task', source_task, chain_id)), pk), 256) as scd_id,
    ingested_at,
    {{ cdc_batch_id(batch) }} as cdc_batch_id
from stitched_versions
