{{
    config(
        incremental_strategy='append',
        on_schema_change='append_new_columns'
    )
}}
{%- set batch = cdc_batch() %}

{#
    The source tables each batch wrote versions of in cdc_history, by the batch cdc_history stamped them
    with: what a scheduled run reads to build only the typed tables whose rows changed (cdc-build, README
    "Only what changed runs"), and what the run's metrics and cdc-status say of each table (README,
    "Operating it"). One row per table and batch.
#}

select
    source_format,
    source_name,
    source_database,
    source_schema,
    source_table,
    count(*) as versions,
    max(valid_from) as newest_valid_from,
    cdc_batch_id
from {{ ref('cdc_history') }}
where {{ cdc_in_batch(batch) }}
group by source_format, source_name, source_database, source_schema, source_table, cdc_batch_id
