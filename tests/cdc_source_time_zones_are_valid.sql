{#
    Every zone of the cdc_sources seed is a zone Spark knows: an unknown zone would read the source's
    zone-less timestamps as NULL in the typed tables.
#}
select
    topic_pattern,
    source_time_zone
from {{ ref('cdc_sources') }}
where
    source_time_zone is not null
    and try_cast(concat('2000-01-01 00:00:00 ', source_time_zone) as timestamp) is null
