{#
    Invariants of an SCD2 history model built from the change log (cdc_history, or any model with its
    columns). A key is (source_format, source_name, source_database, source_schema, source_table, pk); its
    versions are ordered as the history orders them (cdc_version_order: source_task, event_order, event_id).
#}

{# Every key has exactly one open version. #}
{% test one_open_version_per_key(model) %}
    {{ config(tags=['audit']) }}
    select
        source_format,
        source_name,
        source_database,
        source_schema,
        source_table,
        pk,
        count_if(is_current) as open_versions
    from {{ model }}
    group by source_format, source_name, source_database, source_schema, source_table, pk
    having count_if(is_current) != 1
{% endtest %}


{#
    Versions of a key neither overlap nor leave gaps: each version ends where the next one starts and only
    the last one is open. Versions of changes made at the same source time are zero-length
    (valid_from = valid_to), which the version order still tells apart.
#}
{% test contiguous_versions(model) %}
    {{ config(tags=['audit']) }}
    with

    chained as (
        select
            versions.source_name,
            versions.pk,
            versions.source_task,
            versions.event_order,
            versions.event_id,
            versions.valid_from,
            versions.valid_to,
            versions.is_current,
            lead(versions.valid_from) over key_versions as next_valid_from,
            lead(versions.scd_id) over key_versions is null as is_last
        from {{ model }} as versions
        window key_versions as (
            partition by
                versions.source_format, versions.source_name, versions.source_database, versions.source_schema,
                versions.source_table, versions.pk
            order by {{ cdc_version_order('versions') }}
        )
    )

    select *
    from chained
    where
        not (valid_to <=> next_valid_from)
        or is_current != is_last
{% endtest %}


{#
    No version ends before it starts. Versions follow the vendor's order, and their times are the vendor's
    event times, which can run backwards (MySQL binlog times are statement start times, in whole seconds
    for some vendors): a finding about the source's clock, so models declare this test with severity warn.
#}
{% test versions_run_forward(model) %}
    {{ config(tags=['audit']) }}
    select
        source_name,
        source_table,
        pk,
        event_id,
        valid_from,
        valid_to
    from {{ model }}
    where valid_to < valid_from
{% endtest %}


{# The current-state model holds exactly the open, non-deleted versions of the history model. #}
{% test current_matches_history(model, history) %}
    {{ config(tags=['audit']) }}
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
