{#
    Shared by the Alibaba Cloud formats (aliyun_streamx_json, aliyun_datahub_tuple): both split an
    update into a before-image message and an after-image message with one sequence id.
#}

{# Epoch milliseconds to a timestamp; null when unknown (-1, 0 or negative), never a 1969 time. #}
{% macro aliyun_epoch_millis(column) -%}
    if({{ column }} > 0 and {{ column }} < {{ aliyun_max_epoch_millis() }}, timestamp_millis({{ column }}), null)
{%- endmacro %}


{# 9999-12-31 23:59:59.999 UTC + 1 ms: larger epoch milliseconds are no time at all. #}
{% macro aliyun_max_epoch_millis() -%}
    253402300800000
{%- endmacro %}


{#
    Pairs the update halves of a staging model (rows with update_half 'before' or 'after') into one
    row per update. Halves pair on (topic, sequence_id): the n-th before half with the n-th after
    half, each counted in (kafka_partition, kafka_offset) order, so a replayed pair makes a second
    pair instead of a conflict. A half without its partner yet produces nothing and waits.
    The pair takes the before half's partition and offset and the later ingested_at of the two.
    Incremental: a run pairs again only the sequence ids with a half landed in its lookback window and
    appends the pairs it did not make before.
#}
{% macro aliyun_update_pairs(staging_model) %}
    with

    all_halves as (
        select staged.*
        from {{ staging_model }} as staged
        where staged.quarantine_reason is null and staged.update_half is not null
    ),

    {% if is_incremental() %}
        touched_sequences as (
            select distinct
                all_halves.topic,
                all_halves.sequence_id
            from all_halves
            where {{ within_lookback('all_halves.ingested_at', 'ingested_at') }}
        ),

        candidate_halves as (
            select /*+ broadcast(touched_sequences) */ all_halves.*
            from all_halves
            left semi join touched_sequences
                on
                    all_halves.topic = touched_sequences.topic
                    and all_halves.sequence_id = touched_sequences.sequence_id
        ),
    {% else %}
        candidate_halves as (
            select * from all_halves
        ),
    {% endif %}

    halves as (
        select
            candidate_halves.*,
            row_number() over (
                partition by candidate_halves.topic, candidate_halves.sequence_id, candidate_halves.update_half
                order by candidate_halves.kafka_partition, candidate_halves.kafka_offset
            ) as pair_number
        from candidate_halves
    ),

    before_halves as (
        select *
        from halves
        where update_half = 'before'
    ),

    after_halves as (
        select *
        from halves
        where update_half = 'after'
    )

    select
        before_halves.source_format,
        before_halves.topic,
        before_halves.kafka_partition,
        before_halves.kafka_offset,
        before_halves.sequence_id,
        before_halves.pair_number,
        after_halves.vendor_db_type,
        after_halves.source_database,
        after_halves.source_schema,
        after_halves.source_table,
        before_halves.before_image,
        after_halves.after_image,
        coalesce(after_halves.column_types, before_halves.column_types) as column_types,
        after_halves.primary_key,
        coalesce(after_halves.event_ts, before_halves.event_ts) as event_ts,
        coalesce(after_halves.source_position, before_halves.source_position) as source_position,
        greatest(before_halves.ingested_at, after_halves.ingested_at) as ingested_at,
        -- The landed messages this update is made of: the before half, then the after half.
        array(
            named_struct(
                'kafka_partition', before_halves.kafka_partition, 'kafka_offset', before_halves.kafka_offset
            ),
            named_struct(
                'kafka_partition', after_halves.kafka_partition, 'kafka_offset', after_halves.kafka_offset
            )
        ) as message_offsets
    from before_halves
    inner join after_halves
        on
            before_halves.topic = after_halves.topic
            and before_halves.sequence_id = after_halves.sequence_id
            and before_halves.pair_number = after_halves.pair_number
    {% if is_incremental() %}
        left anti join {{ this }} as known_pairs
            on
                before_halves.topic = known_pairs.topic
                and before_halves.sequence_id = known_pairs.sequence_id
                and before_halves.pair_number = known_pairs.pair_number
    {% endif %}
{% endmacro %}


{#
    cdc_events columns (but event_id) of a staging model's complete messages and of its update pairs.
#}
{% macro aliyun_events(staging_model, pairs_model) %}
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
            staged.ingested_at
        from {{ staging_model }} as staged
        where staged.quarantine_reason is null and staged.update_half is null
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
            pairs.ingested_at
        from {{ pairs_model }} as pairs
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
        all_events.primary_key,
        all_events.event_ts,
        cast(all_events.sequence_id as decimal(38, 0)) as source_seq,
        all_events.source_position,
        all_events.ddl_sql,
        all_events.ingested_at
    from all_events
    left join source_db_types
        on all_events.vendor_db_type = source_db_types.vendor_db_type
{% endmacro %}
