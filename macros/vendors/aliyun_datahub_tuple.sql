{#
    The meta columns DataWorks data integration adds to a DataHub Tuple record; every other key of
    the record is a data column. The vendor document spells the time column `_excute_time_`, DataHub
    itself `_execute_time_`: both are read.
#}
{% macro aliyun_datahub_tuple_meta_columns() -%}
    array(
        '_sequence_id_', '_operation_type_', '_execute_time_', '_excute_time_', '_source_table_',
        '_before_image_', '_after_image_'
    )
{%- endmacro %}


{#
    Whether a record's image flags fit its operation: an insert has the after image only, a delete the
    before image only, each half of an update one of the two.
#}
{% macro aliyun_datahub_tuple_image_flags_fit(relation) %}
    (
        (
            {{ relation }}.op in ('c', 'u')
            and {{ relation }}.before_image_flag <=> 'N' and {{ relation }}.after_image_flag <=> 'Y'
        )
        or (
            {{ relation }}.op in ('d', 'u')
            and {{ relation }}.before_image_flag <=> 'Y' and {{ relation }}.after_image_flag <=> 'N'
        )
    )
{% endmacro %}
