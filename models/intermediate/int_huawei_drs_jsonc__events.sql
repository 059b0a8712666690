{#- DRS JSON-C puts a deleted row in `data`; an update's `old` holds its full before image. -#}
{{ huawei_drs_events('stg_huawei_drs_jsonc__messages', deleted_rows_in='data') }}
