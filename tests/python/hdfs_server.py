"""A real HDFS (one NameNode, one DataNode: Hadoop's MiniDFSCluster) on 127.0.0.1, started from the jars
`make hdfs` fetched into jars/hdfs/lib: the shared storage of `make test-cluster`.

Hadoop 3.5.0, the version of pyspark's own Hadoop client. The cluster logs nothing (no SLF4J binding in
the shaded jar): it is ready when it has written its details file.
"""

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from server_process import free_port, stop

HDFS_LIB = Path(__file__).resolve().parents[2] / "jars" / "hdfs" / "lib"


@contextmanager
def hdfs_cluster(root: Path) -> Iterator[str]:
    """Start a new file system with its data under `root`, yield its URI (hdfs://127.0.0.1:port), stop it."""
    if not any(HDFS_LIB.glob("hadoop-client-minicluster-*.jar")):
        raise FileNotFoundError(f"no HDFS jars in {HDFS_LIB}: run `make hdfs`")
    details = root / "hdfs-details.json"
    port = free_port()
    log = (root / "hdfs.log").open("w")
    # Delta's commits on hdfs:// are put-if-absent (an atomic rename that fails when the target exists), which
    # is what lets two drivers commit to one table: dfs.replication=1 for the one DataNode.
    process = subprocess.Popen(
        [
            *("java", "-Xmx512m", "-cp", f"{HDFS_LIB}/*", "org.apache.hadoop.test.MiniDFSClusterManager"),
            *("-format", "-datanodes", "1", "-nnport", str(port), "-httpport", "0"),
            *("-writeDetails", str(details)),
            *("-D", f"hdfs.minidfs.basedir={root / 'hdfs-data'}", "-D", "dfs.replication=1"),
            *("-D", "dfs.permissions.enabled=false"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while not (details.exists() and details.read_text().strip()):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"HDFS did not start (exit {process.poll()}); see {log.name}")
            time.sleep(0.2)
        yield f"hdfs://127.0.0.1:{json.loads(details.read_text())['namenode_port']}"
    finally:
        stop(process)
        log.close()
