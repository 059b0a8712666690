{#
    Fails on every row where one of the given columns is null: the columns a model guarantees, checked in
    one scan where a not_null test per column would read the table once each.
#}
{% test not_null_columns(model, columns) %}
    select {{ columns | join(', ') }}
    from {{ model }}
    where {{ columns | join(' is null or ') }} is null
{% endtest %}
