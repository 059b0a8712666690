{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail'
    )
}}

{#- Each source format contributes one intermediate events model. -#}
{%- set format_events = [
    ref('int_huawei_drs_json__events'),
    ref('int_tencent_dts_protobuf__events'),
    ref('int_aliyun_streamx_json__events'),
    ref('int_aliyun_datahub_tuple__events'),
] -%}

with

new_events as (
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
            primary_key,
            event_ts,
            cast(source_seq as decimal(38, 0)) as source_seq,
            source_position,
            ddl_sql,
            ingested_at
        from {{ events }}
        where {{ within_lookback('ingested_at') }}
        {% if not loop.last %}union all{% endif %}
    {% endfor %}
)

select {{ cdc_event_columns() | join(', ') }}
from new_events
{% if is_incremental() %}
    -- A redelivered message gives the same event ids as its first delivery: keep the first.
    left anti join {{ this }} as known_events
        on new_events.event_id = known_events.event_id
{% endif %}
