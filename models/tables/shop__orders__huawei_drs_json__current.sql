-- Written by cdc-scaffold: the open version of every live key of the history view.
{{ config(enabled=cdc_format_enabled("huawei_drs_json")) }}
select typed_versions.*  -- noqa: AM04
from {{ ref('shop__orders__huawei_drs_json__history') }} as typed_versions
where typed_versions.is_current and not typed_versions.is_deleted
