{#
    Landed messages of some formats that this incremental model has not staged yet, one row per
    (topic, kafka_partition, kafka_offset): the landing commits of the batches it has not finished
    (cdc_landed_rows), stamped with this run's batch. A message landed again at its offset, in the same
    commits or by an earlier one, is staged once.
#}
{% macro landed_messages(source_formats) %}
    {%- set batch = cdc_batch() -%}
    {#- A model building its table from scratch; one that keeps its rows (a rebuilt run log) adds what it lacks. -#}
    {%- if execute and batch.finished_batch_id is none -%}
        {%- do cdc_refuse_a_partial_read_of_landing(source_formats) -%}
    {%- endif -%}
    select
        landed.source_format,
        landed.topic,
        landed.kafka_partition,
        landed.kafka_offset,
        landed.kafka_key,
        landed.value,
        landed.kafka_timestamp,
        landed.ingested_at,
        {{ cdc_batch_id(batch) }} as cdc_batch_id
    from (
        select
            raw.*,
            row_number() over (
                partition by raw.topic, raw.kafka_partition, raw.kafka_offset
                order by raw.ingested_at
            ) as delivery_number
        from {{ cdc_landed_rows(batch) }} as raw
        where raw.source_format in ({{ "'" ~ source_formats | join("', '") ~ "'" }})
    ) as landed
    {% if is_incremental() %}
        -- Staged messages at the batch's offsets, found by a semi join so the anti join reads a few rows.
        left anti join (
            {%- set offsets = ['topic', 'kafka_partition', 'kafka_offset'] %}
            {{ stored_rows_sharing_keys(this, cdc_landed_rows(batch), offsets, offsets) }}
        ) as staged
            on
                {{ same_message('landed', 'staged') }}
    {% endif %}
    where landed.delivery_number = 1
{% endmacro %}


{#
    A model about to read every landed message of these formats (a first build, a full refresh, a rerun after
    a crash in its first batch) while landing retention (cdc-maintain) has removed some of them would write
    a partial table as if it were whole: it stops instead, naming what was removed and the ways forward.
#}
{% macro cdc_refuse_a_partial_read_of_landing(source_formats) %}
    {%- set removed = cdc_landing_retention_marks(source_formats) -%}
    {%- if removed -%}
        {%- set what = [] -%}
        {%- for source_format, cutoff in removed.items() -%}
            {%- do what.append(source_format ~ ' messages landed before ' ~ cutoff) -%}
        {%- endfor -%}
        {{ exceptions.raise_compiler_error(
            model.name ~ ' would read every landed message of ' ~ source_formats | join(', ')
            ~ ', but landing retention (cdc-maintain) removed the ' ~ what | join(' and the ')
            ~ ': the table would miss them. Nothing was written. Either keep this model and rebuild only the'
            ~ ' models after it (dbt build --full-refresh --select ' ~ model.name ~ '+ --exclude ' ~ model.name
            ~ '), or bring the removed messages back into landing first (a Delta RESTORE of landing to a'
            ~ ' version before the retention, while its files are kept; or a new ingest of the topics).'
        ) }}
    {%- endif -%}
{% endmacro %}


{#
    The landing table's schema: var landing_schema, else the environment's CDC_LANDING_SCHEMA (what cdc-land,
    cdc-ingest and the session hook write to: cdc_lakehouse/landing_table.py), else `landing`.
#}
{% macro cdc_landing_schema() -%}
    {{ return(var('landing_schema', env_var('CDC_LANDING_SCHEMA', 'landing'))) }}
{%- endmacro %}
