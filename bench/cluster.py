"""make bench-cluster: bench/run.py through the `cluster` profile against a local standalone master.

Two workers of one core each on this machine, so the figures show the cost of running distributed
(executors in their own JVMs, shuffles between them, the driver apart) rather than more hardware.
Results: bench/results/cluster.json and bench/results/cluster.png.
"""

import os
import sys
import tempfile
from pathlib import Path

# Run as a script: its siblings import directly.
import run
from standalone import standalone_cluster


def main() -> int:
    memory = os.environ.get("CDC_EXECUTOR_MEMORY", "2g")
    with (
        tempfile.TemporaryDirectory(prefix="cdc-bench-cluster-") as root,
        standalone_cluster(Path(root), worker_memory=memory) as (master, _),
    ):
        os.environ.update({"CDC_TARGET": "cluster", "CDC_SPARK_MASTER": master})
        return run.main("cluster")


if __name__ == "__main__":
    sys.exit(main())
