"""The source formats the project reads: the exact names used by cdc-land, sources and models."""

SOURCE_FORMATS: tuple[str, ...] = (
    "aliyun_streamx_json",
    "aliyun_datahub_tuple",
    "tencent_dts_protobuf",
    "kafkariver_json",
    "huawei_drs_json",
    "huawei_drs_jsonc",
    "huawei_drs_mongo_json",
    "huawei_drs_avro",
    "canal_json",
)
