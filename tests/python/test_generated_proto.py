import subprocess
import sys
from pathlib import Path

from helpers import PROJECT_DIR

PROTO_DIR = PROJECT_DIR / "python_udfs" / "proto"


def test_committed_module_is_what_protoc_generates_from_the_committed_schema(tmp_path: Path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{PROTO_DIR}",
            f"--python_out={tmp_path}",
            "tencent_dts_subscribe.proto",
        ],
        check=True,
    )
    generated = (tmp_path / "tencent_dts_subscribe_pb2.py").read_text()
    assert generated == (PROTO_DIR / "tencent_dts_subscribe_pb2.py").read_text()
