{#
    One change event per complete message (insert, delete, one-message update, DDL and control messages)
    and one per paired update; a waiting update half yields nothing yet.
#}
{{ aliyun_events(ref('stg_aliyun_streamx_json__messages'), ref('int_aliyun_streamx_json__update_pairs')) }}
