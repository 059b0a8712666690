{{ config(enabled=cdc_models_enabled(events='aliyun')) }}

{#
    Change events of the Alibaba Cloud formats, in the cdc_events shape without event_id: one per complete
    message (insert, delete, one-message update, DDL and control messages) and one per paired update; a
    waiting update half yields nothing yet.
#}

with

single_messages as (
    select
        staged.source_format,
        staged.topic,
        staged.kafka_partition,
        staged.kafka_offset,
        staged.vendor_db_type,
        staged.source_database,
        staged.source_schema,
        staged.source_table,
        staged.op,
        if(staged.op in ('u', 'd'), staged.before_image, null) as before_image,
        if(staged.op in ('c', 'r', 'u'), staged.after_image, null) as after_image,
        staged.column_types,
        staged.primary_key,
        staged.event_ts,
        staged.sequence_id,
        staged.source_position,
        staged.ddl_sql,
        staged.ingested_at,
        staged.cdc_batch_id
    from {{ ref('int_aliyun__staged_changes') }} as staged
    where staged.update_half is null
),

paired_updates as (
    select
        pairs.source_format,
        pairs.topic,
        pairs.kafka_partition,
        pairs.kafka_offset,
        pairs.vendor_db_type,
        pairs.source_database,
        pairs.source_schema,
        pairs.source_table,
        'u' as op,
        pairs.before_image,
        pairs.after_image,
        pairs.column_types,
        pairs.primary_key,
        pairs.event_ts,
        pairs.sequence_id,
        pairs.source_position,
        cast(null as string) as ddl_sql,
        pairs.ingested_at,
        pairs.cdc_batch_id
    from {{ ref('int_aliyun__update_pairs') }} as pairs
),

all_events as (
    select * from single_messages
    union all
    select * from paired_updates
),

source_db_types as (
    select
        vendor_db_type,
        source_db_type
    from {{ ref('source_db_types') }}
)

select
    all_events.source_format,
    all_events.topic,
    all_events.kafka_partition,
    all_events.kafka_offset,
    0 as row_index,
    coalesce(source_db_types.source_db_type, all_events.vendor_db_type) as source_db_type,
    all_events.source_database,
    all_events.source_schema,
    all_events.source_table,
    all_events.op,
    all_events.before_image as before,
    all_events.after_image as after,
    all_events.column_types,
    -- StreamX's dataColumn schema lists the table's columns; a DataHub record holds the topic's whole row.
    map_keys(coalesce(all_events.column_types, all_events.after_image, all_events.before_image)) as row_columns,
    all_events.primary_key,
    all_events.event_ts,
    cast(all_events.sequence_id as decimal(38, 0)) as source_seq,
    -- The sequence id, or for an unknown one its place by event time; then the position of the message.
    {{ event_order([
        'coalesce(cast(all_events.sequence_id as decimal(38, 0)), '
            ~ aliyun_unknown_sequence_order('all_events.event_ts') ~ ')',
        'all_events.kafka_partition',
        'all_events.kafka_offset',
    ]) }} as event_order,
    all_events.source_position,
    all_events.ddl_sql,
    all_events.ingested_at,
    all_events.cdc_batch_id
from all_events
left join source_db_types
    on all_events.vendor_db_type = source_db_types.vendor_db_type
