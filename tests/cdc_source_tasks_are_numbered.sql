{#
    Every task number of the cdc_sources seed counts from 1: the history orders a source's tasks by it, and
    an empty one is the first task.
#}
select
    topic_pattern,
    source_task
from {{ ref('cdc_sources') }}
where source_task < 1
