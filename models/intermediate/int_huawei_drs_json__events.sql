{#- DRS JSON puts a deleted row in `old`; an update's `old` holds its full before image. -#}
{{ huawei_drs_events('stg_huawei_drs_json__messages', deleted_rows_in='old') }}
