"""The `cluster` profile against a real Spark standalone master and two workers on 127.0.0.1.

Marked `cluster` (run by `make test-cluster`): starting three more JVMs is too slow for `make test`.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark
import pytest
from conftest import Warehouse, assert_succeeded

SPARK_HOME = Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def alive_workers(web_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/json/", timeout=2) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.fixture
def standalone_cluster(tmp_path):
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, web_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    processes = [
        subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(web_port),
            ],
            env=env,
            stdout=(logs / "master.log").open("w"),
            stderr=subprocess.STDOUT,
        )
    ]
    work_dirs = []
    for number in (1, 2):
        work_dir = tmp_path / f"worker-{number}"
        work_dirs.append(work_dir)
        processes.append(
            subprocess.Popen(
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "1",
                    "--memory",
                    "2g",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(work_dir),
                    master_url,
                ],
                env=env,
                stdout=(logs / f"worker-{number}.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        )
    try:
        deadline = time.monotonic() + 120
        while alive_workers(web_port) < 2:
            assert time.monotonic() < deadline, "the standalone cluster did not come up in 120 s"
            assert all(p.poll() is None for p in processes), "a cluster process exited"
            time.sleep(1)
        yield master_url, work_dirs
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)


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
