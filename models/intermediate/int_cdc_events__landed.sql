{#
    The change events of every source format, with their deterministic event_id, from the landed messages
    of the lookback window of cdc_events. Each source format contributes one intermediate events model.
#}
{%- set format_events = [
    ref('int_huawei_drs_json__events'),
    ref('int_huawei_drs_jsonc__events'),
    ref('int_huawei_drs_avro__events'),
    ref('int_tencent_dts_protobuf__events'),
    ref('int_canal_json__events'),
    ref('int_kafkariver_json__events'),
    ref('int_huawei_drs_mongo_json__events'),
    ref('int_aliyun_streamx_json__events'),
    ref('int_aliyun_datahub_tuple__events'),
] -%}

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
    {% if not loop.last %}union all{% endif %}
{% endfor %}
