-- Written by cdc-scaffold: every version of the source table, one typed column per source column.
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
    versions.is_deleted
    {{- cdc_typed_columns('versions', "shop", "orders", source_format="huawei_drs_json") }}
from {{ ref('cdc_history') }} as versions
where {{ cdc_source_table_filter('versions', "shop", "orders", source_format="huawei_drs_json") }}
