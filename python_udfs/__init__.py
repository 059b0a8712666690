"""What Spark executors import: pure decoders and their Spark SQL function registration.

Decoding modules (``mongo_shell``, ``tencent_dts``) are pure: bytes in, plain
values out, no Spark import; ``huawei_drs_avro`` reads and checks the Avro writer schema that Spark's
``from_avro`` decodes with. ``spark_udfs`` wraps them as Arrow-batched Spark SQL
functions. Nothing here imports dbt or the command-line tools (package ``cdc_lakehouse``); this package is
what a cluster's executors receive.
"""
