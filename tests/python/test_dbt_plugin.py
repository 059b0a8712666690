"""The dbt plugin registers the UDFs lazily: commands that need no warehouse never start Spark."""

import os
import subprocess
import sys

import pytest
from helpers import PROJECT_DIR, VENV_BIN


@pytest.mark.parametrize("command", [["parse"], ["ls", "--resource-type", "model"]])
def test_commands_without_a_connection_run_with_no_java_at_all(tmp_path, command):
    env = {
        **os.environ,
        # With no java reachable, any attempt to start a Spark JVM would fail the command.
        "PATH": str(VENV_BIN),
        "JAVA_HOME": str(tmp_path / "no-java"),
        "DBT_TARGET_PATH": str(tmp_path / "target"),
        "DBT_LOG_PATH": str(tmp_path / "logs"),
    }
    result = subprocess.run(
        [str(VENV_BIN / "dbt"), *command], cwd=PROJECT_DIR, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    if command[0] == "ls":
        assert "cdc_lakehouse.marts.cdc_events" in result.stdout


def test_the_plugin_module_is_discoverable_by_dbt():
    probe = "from dbt.plugins.manager import PluginManager;print(sorted(PluginManager.get_prefixed_modules()))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "dbt_cdc_udfs" in result.stdout
