{{ config(materialized='view') }}

-- The open, non-deleted version of every key: an SCD1 view of every source table.
select *
from {{ ref('cdc_history') }}
where is_current and not is_deleted
