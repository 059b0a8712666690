-- Written by cdc-scaffold: every version of the source table, one typed column per source column,
-- a view over cdc_history (README, "Typed tables and querying").
{{ config(enabled=cdc_format_enabled("huawei_drs_json")) }}
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
    versions.cdc_batch_id
    {{- cdc_typed_columns('versions', "shop", "orders", source_format="huawei_drs_json") }}
from {{ ref('cdc_history') }} as versions
where
    {{ cdc_source_table_filter('versions', "shop", "orders", source_format="huawei_drs_json") }}
