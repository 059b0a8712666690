{#- DRS JSON: a DELETE carries its rows in `old`. The shared shape is in macros/huawei_drs_json.sql. -#}
{{ huawei_drs_staged_messages(
    source_format='huawei_drs_json',
    decoded_text='cdc_decode_utf8(landed.value)',
    deleted_rows_in='old',
    format_label='Huawei DRS JSON'
) }}
