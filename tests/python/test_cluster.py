"""The `cluster` profile against a real Spark standalone master and two workers on 127.0.0.1.

Marked `cluster` (run by `make test-cluster`): starting three more JVMs is too slow for `make test`.
"""

import os
import sys

import pytest
from conftest import DRS_AVRO_SCHEMA, Warehouse, assert_succeeded

from bench.standalone import standalone_cluster as start_standalone_cluster


@pytest.fixture
def standalone_cluster(tmp_path):
    with start_standalone_cluster(tmp_path) as cluster:
        yield cluster


@pytest.mark.cluster
def test_dbt_build_runs_on_a_standalone_master_with_two_workers(spark, tmp_path, standalone_cluster):
    master_url, work_dirs = standalone_cluster
    warehouse = Warehouse(tmp_path / "warehouse")
    cluster_env = {
        "CDC_TARGET": "cluster",
        "CDC_SPARK_MASTER": master_url,
        "CDC_EXECUTOR_MEMORY": "1g",
        # Python workers must run the packed environment's interpreter (spark.archives), not this one.
        "PYSPARK_PYTHON": "/nonexistent/python",
    }
    saved_env = {name: os.environ.get(name) for name in cluster_env}
    os.environ.update(cluster_env)
    try:
        assert_succeeded(warehouse.run(sys.executable, "sample_data/land_samples.py"))
        build = warehouse.dbt("build")
    finally:
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value
    assert_succeeded(build)
    assert "Completed successfully" in build.stdout
    # Executors of both applications (landing, dbt) ran on both workers, each with the unpacked environment
    # (python_udfs and what it imports) and its copy of the writer schema.
    for work_dir in work_dirs:
        executor_dirs = list(work_dir.glob("app-*/*"))
        assert len(executor_dirs) == 2
        for executor_dir in executor_dirs:
            assert (executor_dir / "environment" / "bin" / "python").exists()
            assert list((executor_dir / "environment").glob("lib/python3.11/site-packages/python_udfs/tencent_dts.py"))
            assert (executor_dir / DRS_AVRO_SCHEMA.name).read_bytes() == DRS_AVRO_SCHEMA.read_bytes()
    events = spark.read.format("delta").load(warehouse.table_path("cdc", "cdc_events"))
    # Tencent DTS is decoded by Python UDFs: the sample's envelopes, one split in three, become the
    # transactions' rows, GBK text transcoded (tests/python/test_tencent_dts_pipeline.py has them all).
    dts = events.where("topic = 'tencent_dts_protobuf.shop'").orderBy("source_seq", "row_index").collect()
    assert [(event.kafka_offset, event.op) for event in dts] == [
        *[(0, "begin"), (0, "c"), (0, "c"), (0, "commit")],
        *[(1, "begin"), (1, "u"), (1, "d"), (1, "commit"), (1, "ddl")],
        *[(4, "heartbeat"), (4, "checkpoint"), (6, "heartbeat")],
    ]
    assert dts[2].after["customer"] == "李伟"
    assert events.where("topic = 'huawei_drs_json.shop.orders'").count() == 14
    # Executors need the spark-avro jar and read the writer schema file (through a UDF) for DRS Avro: the
    # sample's eight changes of shop.orders are one row each, and its last record is cut in half.
    assert events.where("topic = 'huawei_drs_avro.shop.orders'").count() == 8
    quarantine = spark.read.format("delta").load(warehouse.table_path("cdc", "cdc_quarantine"))
    (truncated,) = quarantine.where("topic = 'huawei_drs_avro.shop.orders'").collect()
    assert (truncated.kafka_offset, truncated.reason.endswith("(from_avro could not read it)")) == (8, True)
