{{
    config(
        incremental_strategy='append',
        on_schema_change='fail'
    )
}}

{#
    The source tables each replication task sent changes of (seed cdc_sources, `source_task`): when its
    first change there happened at the source, and the batch in which the task's full sync was first known
    complete for it (`full_sync_complete`), which cdc_history reads: in that batch it closes the keys of the
    table that the source's earlier tasks left open and the full sync did not send. Appended, a few rows a
    task: a row when a batch brings a task's table for the first time or an earlier change of it, and when
    it finds the task marked complete; a table's values are its rows' earliest (summarized_task_tables). A
    completion once recorded stays, whatever the seed says later.
#}
{%- set batch = cdc_batch() %}

with

batch_task_tables as (
    select
        source_format,
        source_name,
        source_task,
        source_database,
        source_schema,
        source_table,
        min(event_ts) as first_event_ts
    from {{ ref('cdc_events') }}
    where
        {{ cdc_in_batch(batch) }}
        and source_table is not null
        and op in ('c', 'u', 'd', 'r', 't', 'ddl')
    group by source_format, source_name, source_task, source_database, source_schema, source_table
),

marked_tasks as (
    select distinct
        source_name,
        coalesce(source_task, 1) as source_task
    from {{ ref('cdc_sources') }}
    where full_sync_complete
),

stored_task_tables as (
    {% if is_incremental() -%}
        {{ summarized_task_tables(this) }}
    {%- else -%}
        select
            *,
            cast(null as bigint) as full_sync_completed_in_batch
        from batch_task_tables
        where false
    {%- endif %}
),

task_tables as (
    select
        coalesce(batch_task_tables.source_format, stored_task_tables.source_format) as source_format,
        coalesce(batch_task_tables.source_name, stored_task_tables.source_name) as source_name,
        coalesce(batch_task_tables.source_task, stored_task_tables.source_task) as source_task,
        coalesce(batch_task_tables.source_database, stored_task_tables.source_database) as source_database,
        coalesce(batch_task_tables.source_schema, stored_task_tables.source_schema) as source_schema,
        coalesce(batch_task_tables.source_table, stored_task_tables.source_table) as source_table,
        batch_task_tables.first_event_ts as batch_first_event_ts,
        stored_task_tables.first_event_ts as stored_first_event_ts,
        stored_task_tables.source_table is null as is_new,
        stored_task_tables.full_sync_completed_in_batch as stored_completion
    from batch_task_tables
    full outer join stored_task_tables
        on
            {{ same_source_table('batch_task_tables', 'stored_task_tables') }}
            and batch_task_tables.source_task = stored_task_tables.source_task
),

marked_task_tables as (
    select
        task_tables.*,
        marked_tasks.source_task is not null and task_tables.stored_completion is null as is_newly_complete
    from task_tables
    left join marked_tasks
        on
            task_tables.source_name = marked_tasks.source_name
            and task_tables.source_task = marked_tasks.source_task
)

select
    source_format,
    source_name,
    source_task,
    source_database,
    source_schema,
    source_table,
    batch_first_event_ts as first_event_ts,
    if(is_newly_complete, {{ cdc_batch_id(batch) }}, null) as full_sync_completed_in_batch,
    {{ cdc_batch_id(batch) }} as cdc_batch_id
from marked_task_tables
-- What is new: a table, an earlier change of it, a completion.
where
    is_new
    or batch_first_event_ts < stored_first_event_ts
    or (stored_first_event_ts is null and batch_first_event_ts is not null)
    or is_newly_complete
