{#- DRS Avro records read as DRS JSON: a deleted row in `old`. -#}
{{ huawei_drs_events('stg_huawei_drs_avro__messages', deleted_rows_in='old') }}
