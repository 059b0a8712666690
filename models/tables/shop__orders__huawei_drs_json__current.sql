-- Written by cdc-scaffold: the open version of every live key of the history model, merged by
-- chain_id from the history's rows of the batches this model has not read; a key whose open
-- version is a delete leaves the table (merge_delete_when). Its columns are the history model's.
{{ config(unique_key='chain_id', merge_delete_when='is_deleted', enabled=cdc_format_enabled("huawei_drs_json")) }}
{%- set batch = cdc_batch() %}
select typed_versions.*  -- noqa: AM04
from {{ ref('shop__orders__huawei_drs_json__history') }} as typed_versions
where
    typed_versions.is_current
    {%- if is_incremental() %}
        and {{ cdc_in_batch(batch, 'typed_versions.cdc_batch_id') }}
    {%- else %}
        and not typed_versions.is_deleted
    {%- endif %}
