{{ config(enabled=cdc_models_enabled(events='aliyun')) }}

{#
    The usable messages of the Alibaba Cloud formats (aliyun_streamx_json, aliyun_datahub_tuple: the
    formats the registry gives events: aliyun), in the columns their changes are made of. Both split an
    update into a before-image message and an after-image message (`update_half`) with one sequence id,
    given as digits, or null when the vendor's is unknown (StreamX null or "-1").
#}

{% for source_format in cdc_formats(events='aliyun') %}
    select
        staged.source_format,
        staged.topic,
        staged.kafka_partition,
        staged.kafka_offset,
        staged.update_half,
        staged.sequence_id,
        staged.vendor_db_type,
        staged.source_database,
        staged.source_schema,
        staged.source_table,
        staged.op,
        staged.before_image,
        staged.after_image,
        staged.column_types,
        staged.primary_key,
        staged.event_ts,
        staged.source_position,
        staged.ddl_sql,
        staged.ingested_at,
        staged.cdc_batch_id
    from {{ ref('stg_' ~ cdc_format_trait(source_format, 'staging') ~ '__messages') }} as staged
    where staged.quarantine_reason is null
    {% if not loop.last %}union all{% endif %}
{% endfor %}
