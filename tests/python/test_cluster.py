"""The `cluster` profile against a real Spark standalone master and two workers on 127.0.0.1.

Marked `cluster` (run by `make test-cluster`): starting three more JVMs is too slow for `make test`.
"""

import os
import sys

import pytest
from conftest import Warehouse, assert_succeeded

from bench.standalone import standalone_cluster as start_standalone_cluster


@pytest.fixture
def standalone_cluster(tmp_path):
    with start_standalone_cluster(tmp_path) as cluster:
        yield cluster


@pytest.mark.cluster
def test_dbt_build_runs_on_a_standalone_master_with_two_workers(spark, tmp_path, standalone_cluster):
    master_url, work_dirs = standalone_cluster
    warehouse = Warehouse(tmp_path / "warehouse")
    cluster_env = {"CDC_TARGET": "cluster", "CDC_SPARK_MASTER": master_url, "CDC_EXECUTOR_MEMORY": "1g"}
    os.environ.update(cluster_env)
    try:
        assert_succeeded(warehouse.run(sys.executable, "sample_data/land_samples.py"))
        build = warehouse.dbt("build")
    finally:
        for name in cluster_env:
            os.environ.pop(name)
    assert_succeeded(build)
    assert "Completed successfully" in build.stdout
    # Executors of both applications (landing, dbt) ran on both workers.
    for work_dir in work_dirs:
        assert len(list(work_dir.glob("app-*"))) == 2
    events = spark.read.format("delta").load(warehouse.table_path("cdc", "cdc_events"))
    assert events.where("topic = 'huawei_drs_json.shop.orders'").count() == 14
    # Executors need the spark-avro jar and read the writer schema file (through a UDF) for DRS Avro: the
    # sample's eight changes of shop.orders are one row each, and its last record is cut in half.
    assert events.where("topic = 'huawei_drs_avro.shop.orders'").count() == 8
    quarantine = spark.read.format("delta").load(warehouse.table_path("cdc", "cdc_quarantine"))
    (truncated,) = quarantine.where("topic = 'huawei_drs_avro.shop.orders'").collect()
    assert (truncated.kafka_offset, truncated.reason.endswith("(from_avro could not read it)")) == (8, True)
