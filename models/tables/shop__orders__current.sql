{{ cdc_table_current("shop", "orders", source_format="huawei_drs_json") }}
