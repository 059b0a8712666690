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
