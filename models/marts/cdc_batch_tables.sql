{{
    config(
        incremental_strategy='append'
    )
}}
{%- set batch = cdc_batch() %}

{#
    The source tables each batch wrote versions of in cdc_history, by the batch cdc_history stamped them
    with: what a scheduled run reads to build only the typed tables whose rows changed (cdc-build, README
    "Only what changed runs"). One row per table and batch.
#}

select
    source_format,
    source_name,
    source_database,
    source_schema,
    source_table,
    count(*) as versions,
    cdc_batch_id
from {{ ref('cdc_history') }}
where {{ cdc_in_batch(batch) }}
group by source_format, source_name, source_database, source_schema, source_table, cdc_batch_id
