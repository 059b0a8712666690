-- Written by cdc-scaffold: every version of the source table, one typed column per source column,
-- merged by scd_id from the versions cdc_history wrote in the batches this model has not read.
{{ config(unique_key='scd_id', enabled=cdc_format_enabled("huawei_drs_json")) }}
{%- set batch = cdc_batch() %}
select
    versions.source_format,
    versions.source_name,
    versions.source_database,
    versions.source_schema,
    versions.source_table,
    versions.pk,
    versions.valid_from,
    versions.valid_to,
    versions.is_current,
    versions.is_deleted,
    versions.op,
    versions.source_seq,
    versions.scd_id,
    {{ history_chain_id('versions') }} as chain_id,
    {{ cdc_batch_id(batch) }} as cdc_batch_id
    {{- cdc_typed_columns('versions', "shop", "orders", source_format="huawei_drs_json") }}
from {{ ref('cdc_history') }} as versions
where
    {{ cdc_source_table_filter('versions', "shop", "orders", source_format="huawei_drs_json") }}
    and {{ cdc_in_batch(batch, 'versions.cdc_batch_id') }}
