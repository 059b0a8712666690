{#
    A history's guarantees in one query of its rows (in a scheduled run, the rows of the batch: every version
    of each key the batch touched, as cdc_history rebuilds whole chains): the given key columns and the flags
    are never null, one row per scd_id, and one open version per key (source, table, pk), which every typed
    view over the history inherits. One row per problem: what is wrong, and where. Both counts come from one
    aggregation (grouping sets): a Spark stage per check costs a second whatever the rows.
#}
{% test cdc_versions_hold(model, never_null) %}
    {%- set key = ['source_format', 'source_name', 'source_database', 'source_schema', 'source_table', 'pk'] -%}
    {%- set never_null = never_null + ['is_current', 'is_deleted'] -%}
    with

    tested_rows as (
        select * from {{ model }}
    ),

    -- One group per scd_id, and one per key: its rows, and its open versions.
    key_counts as (
        select
            grouping(scd_id) = 0 as is_version,
            coalesce(scd_id, to_json(named_struct(
                {%- for column in key %}
                    '{{ column }}', {{ column }}{{ ',' if not loop.last }}
                {%- endfor %}
            ))) as key_value,
            count(*) as key_rows,
            count_if(is_current) as open_versions
        from tested_rows
        group by grouping sets ((scd_id), ({{ key | join(', ') }}))
    )

    select
        'a null key or flag' as problem,
        to_json(named_struct(
            {%- for column in never_null %}
                '{{ column }}', {{ column }}{{ ',' if not loop.last }}
            {%- endfor %}
        )) as detail
    from tested_rows
    where {{ never_null | join(' is null or ') }} is null

    union all

    select
        'more than one row of its scd_id' as problem,
        key_value as detail
    from key_counts
    where is_version and key_rows > 1

    union all

    select
        'more than one open version of its key' as problem,
        key_value as detail
    from key_counts
    where not is_version and open_versions > 1
{% endtest %}
