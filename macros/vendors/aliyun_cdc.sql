{#
    Shared by the Alibaba Cloud formats (aliyun_streamx_json, aliyun_datahub_tuple): both split an
    update into a before-image message and an after-image message with one sequence id. Staging gives
    sequence_id as digits, or null when the vendor's is unknown (StreamX null or "-1").
#}

{# Epoch milliseconds to a timestamp; null when unknown (-1, 0 or negative), never a 1969 time. #}
{% macro aliyun_epoch_millis(column) -%}
    if({{ column }} > 0 and {{ column }} < {{ aliyun_max_epoch_millis() }}, timestamp_millis({{ column }}), null)
{%- endmacro %}


{# 9999-12-31 23:59:59.999 UTC + 1 ms: larger epoch milliseconds are no time at all. #}
{% macro aliyun_max_epoch_millis() -%}
    253402300800000
{%- endmacro %}


{#
    Where a change whose sequence id is unknown sorts among the sequence ids of its stream: a known
    sequence id is epoch milliseconds * 10^6 + a counter, so an unknown one is placed at the end of the
    millisecond of its event time, event_ts (epoch milliseconds * 10^6 + 999999: after the known
    sequence ids of that millisecond). Exact only where the millisecond part is the change's time; see
    "Order" in models/staging/aliyun_streamx_json/README.md. Without an event time either (DataWorks writes
    "-1" for both on the records of a sync task's full-load phase), -1: before every known sequence id, as
    the vendor orders full-load data before the incremental data merged onto it; the Kafka position, the
    next part of event_order, then orders such changes.
#}
{% macro aliyun_unknown_sequence_order(event_ts) -%}
    coalesce(cast(unix_millis({{ event_ts }}) as decimal(38, 0)) * 1000000 + 999999, -1)
{%- endmacro %}
