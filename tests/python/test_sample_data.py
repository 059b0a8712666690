import subprocess
import sys

from helpers import PROJECT_DIR

from cdc_lakehouse.formats import SOURCE_FORMATS


def test_sample_data_is_what_the_generator_writes(tmp_path):
    subprocess.run([sys.executable, "sample_data/generate.py", str(tmp_path)], cwd=PROJECT_DIR, check=True)
    written_files = [path for path in tmp_path.rglob("*") if path.is_file()]
    for written in written_files:
        committed = PROJECT_DIR / "sample_data" / written.relative_to(tmp_path)
        assert written.read_bytes() == committed.read_bytes(), committed
    # Every format has sample messages.
    assert {path.relative_to(tmp_path).parts[0] for path in written_files} == set(SOURCE_FORMATS)
