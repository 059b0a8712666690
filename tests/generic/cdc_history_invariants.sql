{#
    Invariants of an SCD2 history model built from the change log (cdc_history, or any model with its
    columns). A key is (source_format, source_database, source_schema, source_table, pk); its versions are
    ordered by (source_seq, row_index).
#}

{# Every key has exactly one open version. #}
{% test one_open_version_per_key(model) %}
    select
        source_format,
        source_database,
        source_schema,
        source_table,
        pk,
        count_if(is_current) as open_versions
    from {{ model }}
    group by source_format, source_database, source_schema, source_table, pk
    having count_if(is_current) != 1
{% endtest %}


{#
    Versions of a key neither overlap nor leave gaps: each version ends where the next one starts, only the
    last one is open, and none ends before it starts. Versions of changes made at the same source time are
    zero-length (valid_from = valid_to), which the order by (source_seq, row_index) still tells apart.
#}
{% test contiguous_versions(model) %}
    with

    chained as (
        select
            pk,
            source_seq,
            row_index,
            valid_from,
            valid_to,
            is_current,
            lead(valid_from) over key_versions as next_valid_from,
            lead(row_index) over key_versions is null as is_last
        from {{ model }}
        window key_versions as (
            partition by source_format, source_database, source_schema, source_table, pk
            order by source_seq, row_index
        )
    )

    select *
    from chained
    where
        not (valid_to <=> next_valid_from)
        or is_current != is_last
        or valid_to < valid_from
{% endtest %}


{# The current-state model holds exactly the open, non-deleted versions of the history model. #}
{% test current_matches_history(model, history) %}
    with

    expected as (
        select scd_id from {{ history }}
        where is_current and not is_deleted
    ),

    actual as (
        select scd_id from {{ model }}
    ),

    -- Anti-joins, not `not in`: a null-aware `not in` is a nested-loop join once neither side broadcasts.
    missing as (
        select
            'missing from the current state' as problem,
            expected.scd_id
        from expected
        left anti join actual
            on expected.scd_id = actual.scd_id
    ),

    unexpected as (
        select
            'not an open, non-deleted version' as problem,
            actual.scd_id
        from actual
        left anti join expected
            on actual.scd_id = expected.scd_id
    )

    select * from missing
    union all
    select * from unexpected
{% endtest %}
