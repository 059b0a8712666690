{#
    Shared by the Alibaba Cloud formats (aliyun_streamx_json, aliyun_datahub_tuple): both split an
    update into a before-image message and an after-image message with one sequence id. Staging gives
    sequence_id as digits, or null when the vendor's is unknown (StreamX null or "-1").
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
    Where a change whose sequence id is unknown sorts among the sequence ids of its stream: a known
    sequence id is epoch milliseconds * 10^6 + a counter, so an unknown one is placed at the end of the
    millisecond of its event time, event_ts (epoch milliseconds * 10^6 + 999999: after the known
    sequence ids of that millisecond). Exact only where the millisecond part is the change's time; see
    "Order" in models/staging/aliyun_streamx_json/README.md. Null when event_ts is unknown; staging
    quarantines such changes.
#}
{% macro aliyun_unknown_sequence_order(event_ts) -%}
    cast(unix_millis({{ event_ts }}) as decimal(38, 0)) * 1000000 + 999999
{%- endmacro %}


{#
    Pairs the update halves of a staging model (rows with update_half 'before' or 'after') into one
    row per before half, so the update event takes the before half's topic, partition and offset (its
    event_id) whatever else landed, in whichever run or partition its partner landed:
    - a half with a sequence id: every before half pairs with an after half of the same (topic,
      sequence_id): the one that follows it most closely in its partition, else the first in
      (kafka_partition, kafka_offset) order. A replayed before half is a pair of its own (the same change
      at another offset: cdc_events keeps the first, cdc_redeliveries the copy); a replayed after half
      adds no pair and is accounted for by its sequence id.
    - a half whose sequence id is unknown (null): it cannot pair by sequence id, which would pair the
      unrelated halves of other updates. A before half pairs only with the after half at the next offset
      of its partition when it is of the same table and event time, as the vendor writes an update's two
      halves one after the other.
    A half without its partner produces nothing and waits. The pair takes the later ingested_at of its two
    halves. Incremental: a run pairs again only the halves of sequence ids with a half landed in its
    lookback window (unknown sequence ids: pairs with a half in it) and appends the pairs of before halves
    not paired before.
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
            where
                all_halves.sequence_id is not null
                and {{ within_lookback('all_halves.ingested_at', 'ingested_at') }}
        ),

        sequenced_halves as (
            select /*+ broadcast(touched_sequences) */ all_halves.*
            from all_halves
            left semi join touched_sequences
                on
                    all_halves.topic = touched_sequences.topic
                    and all_halves.sequence_id = touched_sequences.sequence_id
        ),
    {% else %}
        sequenced_halves as (
            select all_halves.*
            from all_halves
            where all_halves.sequence_id is not null
        ),
    {% endif %}

    sequenced_candidates as (
        select
            struct(before_halves.*) as before_half,
            struct(after_halves.*) as after_half,
            row_number() over (
                partition by before_halves.topic, before_halves.kafka_partition, before_halves.kafka_offset
                order by
                    case
                        when
                            after_halves.kafka_partition = before_halves.kafka_partition
                            and after_halves.kafka_offset > before_halves.kafka_offset
                            then 0
                        else 1
                    end,
                    after_halves.kafka_partition,
                    after_halves.kafka_offset
            ) as preference
        from sequenced_halves as before_halves
        inner join sequenced_halves as after_halves
            on
                before_halves.topic = after_halves.topic
                and before_halves.sequence_id = after_halves.sequence_id
                and after_halves.update_half = 'after'
        where before_halves.update_half = 'before'
    ),

    adjacent_pairs as (
        select
            struct(before_halves.*) as before_half,
            struct(after_halves.*) as after_half
        from all_halves as before_halves
        inner join all_halves as after_halves
            on
                before_halves.topic = after_halves.topic
                and before_halves.kafka_partition = after_halves.kafka_partition
                and before_halves.kafka_offset + 1 = after_halves.kafka_offset
                and after_halves.update_half = 'after'
                and after_halves.sequence_id is null
                and before_halves.source_database <=> after_halves.source_database
                and before_halves.source_schema <=> after_halves.source_schema
                and before_halves.source_table = after_halves.source_table
                and before_halves.event_ts = after_halves.event_ts
        where
            before_halves.update_half = 'before'
            and before_halves.sequence_id is null
            {% if is_incremental() %}
                and (
                    {{ within_lookback('before_halves.ingested_at', 'ingested_at') }}
                    or {{ within_lookback('after_halves.ingested_at', 'ingested_at') }}
                )
            {% endif %}
    ),

    pairs as (
        select
            sequenced_candidates.before_half,
            sequenced_candidates.after_half
        from sequenced_candidates
        where sequenced_candidates.preference = 1
        union all
        select
            adjacent_pairs.before_half,
            adjacent_pairs.after_half
        from adjacent_pairs
    )

    select
        pairs.before_half.source_format,
        pairs.before_half.topic,
        pairs.before_half.kafka_partition,
        pairs.before_half.kafka_offset,
        pairs.before_half.sequence_id,
        pairs.after_half.vendor_db_type,
        pairs.after_half.source_database,
        pairs.after_half.source_schema,
        pairs.after_half.source_table,
        pairs.before_half.before_image,
        pairs.after_half.after_image,
        coalesce(pairs.after_half.column_types, pairs.before_half.column_types) as column_types,
        pairs.after_half.primary_key,
        coalesce(pairs.after_half.event_ts, pairs.before_half.event_ts) as event_ts,
        coalesce(pairs.after_half.source_position, pairs.before_half.source_position) as source_position,
        greatest(pairs.before_half.ingested_at, pairs.after_half.ingested_at) as ingested_at,
        -- The landed messages this update is made of: the before half, then the after half.
        array(
            named_struct(
                'kafka_partition', pairs.before_half.kafka_partition,
                'kafka_offset', pairs.before_half.kafka_offset
            ),
            named_struct(
                'kafka_partition', pairs.after_half.kafka_partition,
                'kafka_offset', pairs.after_half.kafka_offset
            )
        ) as message_offsets
    from pairs
    {% if is_incremental() %}
        left anti join {{ this }} as known_pairs
            on
                pairs.before_half.topic = known_pairs.topic
                and pairs.before_half.kafka_partition = known_pairs.kafka_partition
                and pairs.before_half.kafka_offset = known_pairs.kafka_offset
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
        -- The sequence id, or for an unknown one its place by event time; then the position of the message.
        {{ event_order([
            'coalesce(cast(all_events.sequence_id as decimal(38, 0)), '
                ~ aliyun_unknown_sequence_order('all_events.event_ts') ~ ')',
            'all_events.kafka_partition',
            'all_events.kafka_offset',
        ]) }} as event_order,
        all_events.source_position,
        all_events.ddl_sql,
        all_events.ingested_at
    from all_events
    left join source_db_types
        on all_events.vendor_db_type = source_db_types.vendor_db_type
{% endmacro %}
