"""A Spark standalone master and workers on 127.0.0.1, started from the pyspark installation.

Used by `make test-cluster` and `make bench-cluster`: the `cluster` profile against a real master.
"""

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark

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


@contextmanager
def standalone_cluster(
    root: Path, workers: int = 2, worker_cores: int = 1, worker_memory: str = "2g"
) -> Iterator[tuple[str, list[Path]]]:
    """Yield the master URL and the workers' work directories once every worker has registered."""
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, web_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    logs = root / "cluster-logs"
    logs.mkdir(parents=True, exist_ok=True)

    def start(name: str, arguments: list[str]) -> subprocess.Popen:
        return subprocess.Popen(
            [spark_class, *arguments], env=env, stdout=(logs / f"{name}.log").open("w"), stderr=subprocess.STDOUT
        )

    processes = [
        start(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web_port)),
            ],
        )
    ]
    work_dirs = [root / f"worker-{number}" for number in range(1, workers + 1)]
    for number, work_dir in enumerate(work_dirs, start=1):
        processes.append(
            start(
                f"worker-{number}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    *("--host", "127.0.0.1", "--cores", str(worker_cores), "--memory", worker_memory),
                    *("--webui-port", str(free_port()), "--work-dir", str(work_dir)),
                    master_url,
                ],
            )
        )
    try:
        deadline = time.monotonic() + 120
        while alive_workers(web_port) < workers:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standalone cluster did not come up in 120 s (logs: {logs})")
            if any(process.poll() is not None for process in processes):
                raise RuntimeError(f"a standalone cluster process exited (logs: {logs})")
            time.sleep(1)
        yield master_url, work_dirs
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)
