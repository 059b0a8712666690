{#-
    DRS Avro: each message is one schemaless Avro record, read with the writer schema named by the var
    `huawei_drs_avro_schema` and rendered as DRS JSON text (a DELETE's rows in `old`), then parsed like
    DRS JSON. Shared shape: macros/huawei_drs_json.sql.
-#}
{{ huawei_drs_staged_messages(
    source_format='huawei_drs_avro',
    decoded_text=huawei_drs_avro_decoded('landed.value'),
    deleted_rows_in='old',
    format_label='Huawei DRS (Avro record rendered as DRS JSON)'
) }}
