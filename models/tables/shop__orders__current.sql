-- Written by cdc-scaffold: the open, non-deleted versions of the history model.
-- Its columns are the history model's, which follow the table's column types.
select typed_versions.*  -- noqa: AM04
from {{ ref('shop__orders__history') }} as typed_versions
where typed_versions.is_current and not typed_versions.is_deleted
