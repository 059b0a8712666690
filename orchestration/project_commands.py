"""The project's commands as an orchestrator's task runs them: a process each (one Spark driver), its output
streamed into the task's log, and what dbt ran read back for the orchestrator to show per model."""

import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from orchestration.environment import PROJECT_DIR, VENV_BIN, project_environment


class ProjectCommandFailed(Exception):
    """A command exited non-zero: its own error line, or its exit code."""


def run_project_command(arguments: list[str], log: Callable[[str], None]) -> None:
    """Run one of the project's commands (cdc-run, cdc-maintain, dbt) with the project's environment."""
    command = arguments[0]
    process = subprocess.Popen(
        [str(VENV_BIN / command), *arguments[1:]],
        cwd=PROJECT_DIR,
        # A task's log is a file: dbt's colours would be escape codes in it.
        env={**os.environ, **project_environment(), "DBT_USE_COLORS": "false"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    errors = []
    for line in process.stdout:
        log(line.rstrip())
        if line.startswith(f"{command}: error") or line.startswith(f"{command}: run "):
            errors.append(line.strip())
    if process.wait() != 0:
        raise ProjectCommandFailed(errors[-1] if errors else f"{command} exited with {process.returncode}")


def run_reporting(arguments: list[str], log: Callable[[str], None]) -> tuple[dict, ProjectCommandFailed | None]:
    """A command that writes `--report` (cdc-run --once, cdc-build): its report, and its failure if it failed.
    A failed run still reports the nodes that ran, for the orchestrator to show which failed."""
    with tempfile.TemporaryDirectory(prefix="cdc-report-") as folder:
        report = Path(folder) / "report.json"
        return run_and_read([*arguments, "--report", str(report)], report, log)


def run_audit(log: Callable[[str], None]) -> tuple[dict, ProjectCommandFailed | None]:
    """`dbt build --selector audit` (make audit): dbt's run_results.json, and the failure if a test failed."""
    results = Path(os.environ.get("DBT_TARGET_PATH") or PROJECT_DIR / "target") / "run_results.json"
    results.unlink(missing_ok=True)
    return run_and_read(["dbt", "build", "--selector", "audit"], results, log)


def run_and_read(
    arguments: list[str], results: Path, log: Callable[[str], None]
) -> tuple[dict, ProjectCommandFailed | None]:
    """Run the command, then read the results file it wrote (none: no node ran), whether or not it failed."""
    try:
        run_project_command(arguments, log)
        failure = None
    except ProjectCommandFailed as exc:
        failure = exc
    return (json.loads(results.read_text()) if results.exists() else {"results": []}), failure


def models_built(report: dict) -> list[dict]:
    """The models a run built (status success), and the typed views whose rows it changed, each with its
    relation."""
    return [r for r in report["results"] if r["unique_id"].startswith("model.") and r["status"] == "success"]


def result_lines(report: dict) -> list[str]:
    """One line per node dbt ran, for the task's log: its status, its time and its unique id."""
    return [f"{r['status']:<8} {r['execution_time'] or 0.0:6.1f} s  {r['unique_id']}" for r in report["results"]]
