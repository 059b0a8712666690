import subprocess
import sys

from conftest import PROJECT_DIR


def test_sample_data_is_what_the_generator_writes(tmp_path):
    subprocess.run([sys.executable, "sample_data/generate.py", str(tmp_path)], cwd=PROJECT_DIR, check=True)
    for written in tmp_path.rglob("*.*"):
        committed = PROJECT_DIR / "sample_data" / written.relative_to(tmp_path)
        assert written.read_bytes() == committed.read_bytes(), committed
    assert list(tmp_path.rglob("*.*"))
