{{ cdc_table_history("shop", "orders", source_format="huawei_drs_json") }}
