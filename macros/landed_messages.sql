{#
    Landed messages of some formats that this incremental model has not staged yet, one row per
    (topic, kafka_partition, kafka_offset). Landing batches can commit out of ingested_at order, so
    the model re-reads a lookback window and drops what it staged already instead of trusting a
    watermark alone.
#}
{% macro landed_messages(source_formats) %}
    select
        landed.source_format,
        landed.topic,
        landed.kafka_partition,
        landed.kafka_offset,
        landed.kafka_key,
        landed.value,
        landed.kafka_timestamp,
        landed.ingested_at
    from (
        select
            raw.*,
            row_number() over (
                partition by raw.topic, raw.kafka_partition, raw.kafka_offset
                order by raw.ingested_at
            ) as delivery_number
        from {{ source('landing', 'cdc_raw') }} as raw
        where
            raw.source_format in ({{ "'" ~ source_formats | join("', '") ~ "'" }})
            and {{ within_lookback('raw.ingested_at', 'ingested_at') }}
    ) as landed
    {% if is_incremental() %}
        left anti join {{ this }} as staged
            on
                landed.topic = staged.topic
                and landed.kafka_partition = staged.kafka_partition
                and landed.kafka_offset = staged.kafka_offset
    {% endif %}
    where landed.delivery_number = 1
{% endmacro %}


{# The earliest timestamp an incremental run of this model reads again. #}
{% macro lookback_start(column) %}
    select
        coalesce(
            max({{ column }}) - interval {{ var('landing_lookback_minutes', 60) }} minutes,
            timestamp '1970-01-01 00:00:00'
        )
    from {{ this }}
{% endmacro %}


{#
    A predicate keeping the rows an incremental run of this model has to look at again: everything
    on a full build, otherwise the lookback window before the latest `this_column` of this model
    (`column` qualified for the query that filters, `this_column` as this model names it).
#}
{% macro within_lookback(column, this_column=none) %}
    {%- if is_incremental() -%}
        {{ column }} >= ({{ lookback_start(this_column or column) }})
    {%- else -%}
        true
    {%- endif -%}
{% endmacro %}
