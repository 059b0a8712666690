{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail'
    )
}}

{#
    The change events of every source format, with their deterministic event_id and their source stream
    (name, replication task, time zone: seed cdc_sources), as the batch's staged messages give them. The
    registered source formats (var cdc_formats) contribute their events models int_<e>__events. Stored,
    not ephemeral: cdc_events and cdc_redeliveries both read it, and the nine formats' SQL runs once per
    batch.
#}
{%- set batch = cdc_batch() -%}
{%- set format_events = [] -%}
{%- for events_name in cdc_format_traits('events') -%}
    {%- do format_events.append(ref('int_' ~ events_name ~ '__events')) -%}
{%- endfor -%}

with

format_events as (
    {% for events in format_events %}
        select
            {{ event_id('source_format', 'topic', 'kafka_partition', 'kafka_offset', 'row_index') }} as event_id,
            source_format,
            topic,
            kafka_partition,
            kafka_offset,
            row_index,
            source_db_type,
            source_database,
            source_schema,
            source_table,
            op,
            before,
            after,
            column_types,
            row_columns,
            primary_key,
            event_ts,
            cast(source_seq as decimal(38, 0)) as source_seq,
            event_order,
            source_position,
            ddl_sql,
            ingested_at
        from {{ events }}
        where {{ cdc_in_batch(batch) }}
        {% if not loop.last %}union all{% endif %}
    {% endfor %}
),

-- One row holding every rule, most specific (longest pattern) first: each event takes the first rule
-- that matches its topic, without a join that could multiply events when patterns overlap.
source_rules as (
    select
        coalesce(
            sort_array(
                collect_list(struct(
                    -length(topic_pattern) as precedence, topic_pattern, source_name, source_task, source_time_zone
                ))
            ),
            array()
        ) as rules
    from {{ ref('cdc_sources') }}
),

sourced_events as (
    select /*+ broadcast(source_rules) */
        format_events.*,
        element_at(
            filter(source_rules.rules, rule -> format_events.topic rlike concat('^(?:', rule.topic_pattern, ')$')),
            1
        ) as source_rule
    from format_events
    cross join source_rules
)

select
    sourced_events.event_id,
    sourced_events.source_format,
    coalesce(sourced_events.source_rule.source_name, sourced_events.topic) as source_name,
    -- Tasks of one source (a replication task re-created) are numbered in the order they ran.
    coalesce(sourced_events.source_rule.source_task, 1) as source_task,
    coalesce(
        sourced_events.source_rule.source_time_zone, '{{ var("cdc_default_source_time_zone", "UTC") }}'
    ) as source_time_zone,
    sourced_events.topic,
    sourced_events.kafka_partition,
    sourced_events.kafka_offset,
    sourced_events.row_index,
    sourced_events.source_db_type,
    sourced_events.source_database,
    sourced_events.source_schema,
    sourced_events.source_table,
    sourced_events.op,
    sourced_events.before,
    sourced_events.after,
    sourced_events.column_types,
    sourced_events.row_columns,
    sourced_events.primary_key,
    sourced_events.event_ts,
    sourced_events.source_seq,
    sourced_events.event_order,
    sourced_events.source_position,
    sourced_events.ddl_sql,
    sourced_events.ingested_at,
    {{ cdc_batch_id(batch) }} as cdc_batch_id
from sourced_events
