{#- DRS JSON-C: a DELETE carries its rows in `data` (like Canal). Shared shape: macros/huawei_drs_json.sql. -#}
{{ huawei_drs_staged_messages(
    source_format='huawei_drs_jsonc',
    decoded_text='cdc_decode_utf8(landed.value)',
    deleted_rows_in='data',
    format_label='Huawei DRS JSON-C'
) }}
