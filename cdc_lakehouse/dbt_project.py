"""dbt on the project in this process: parsed once, and again only when a file of the project changes.

dbt's programmatic runner takes a parsed manifest (dbtRunner(manifest=...)), so a process that runs many
commands (cdc-build's two parts, cdc-run's loop) pays the parse once instead of per command. The Spark
session is the process's own: dbt-spark's session method gets the running one.
"""

import copy
import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path

from cdc_lakehouse import PROJECT_DIR

# What dbt parses: a change to any file under these makes the next command parse again.
PARSED_PATHS = ("dbt_project.yml", "selectors.yml", "models", "macros", "seeds", "snapshots", "tests", "profiles")
# The tag of the pipeline's own nodes (dbt_project.yml): the batch machinery applies to them alone.
PIPELINE_TAG = "cdc_pipeline"


def resolve_project_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The dbt project a command works on, found as dbt finds it (dbt-core's cli/resolvers.py, not imported:
    it imports all of dbt's command line): --project-dir, else DBT_PROJECT_DIR, else the nearest folder from
    the current one up that holds a dbt_project.yml; else the project this package was installed from."""
    if explicit:
        return Path(explicit).resolve()
    if os.environ.get("DBT_PROJECT_DIR"):
        return Path(os.environ["DBT_PROJECT_DIR"]).resolve()
    here = Path.cwd()
    return next((folder for folder in (here, *here.parents) if (folder / "dbt_project.yml").is_file()), PROJECT_DIR)


def resolve_profiles_dir(project_dir: Path) -> Path:
    """Where the dbt profile is: DBT_PROFILES_DIR, else the project's profiles/ folder when it holds one (where
    this project keeps it), else dbt's own default (the current folder when it holds one, else ~/.dbt)."""
    if os.environ.get("DBT_PROFILES_DIR"):
        return Path(os.environ["DBT_PROFILES_DIR"])
    for folder in (project_dir / "profiles", Path.cwd()):
        if (folder / "profiles.yml").is_file():
            return folder
    return Path.home() / ".dbt"


# The commands whose result is run_results.json (dbt's RunExecutionResult).
RESULTS_COMMANDS = frozenset({"build", "run", "test", "seed", "snapshot"})


class DbtCommandError(RuntimeError):
    """A dbt command that did not run (a compile error, a bad argument): not a model or test that failed."""


class DbtProject:
    def __init__(
        self,
        project_dir: Path | None = None,
        target: str | None = None,
        dbt_vars: dict | None = None,
        callbacks: list | None = None,
    ):
        """`callbacks`: functions dbt calls with each event of every command (dbtRunner's callbacks)."""
        self.project_dir = resolve_project_dir(project_dir)
        self.profiles_dir = resolve_profiles_dir(self.project_dir)
        self.target = target
        self.dbt_vars = dict(dbt_vars or {})
        self.callbacks = list(callbacks or [])
        self._manifest = None
        self._fingerprint: tuple | None = None
        self._selections: dict[str, list[str]] = {}

    def spark_settings(self) -> dict[str, str]:
        """The Spark settings (server_side_parameters) of the profile's target, for the command's session."""
        from cdc_lakehouse.session import profile_spark_settings

        return profile_spark_settings(self.target, str(self.profiles_dir))

    def invoke(self, *arguments: str, dbt_vars: dict | None = None, callbacks: Iterable = ()):
        """One dbt command on the parsed project: dbt's result (success, result, exception). A command that runs
        nodes writes run_results.json, as dbt does, but not manifest.json, which the parse wrote: dbt would
        write every node of the project again, whatever the command ran (docs/decisions.md, "A run's commands
        leave the parsed manifest as it is")."""
        from dbt.cli.main import dbtRunner

        runs_nodes = arguments[0] in RESULTS_COMMANDS
        result = dbtRunner(manifest=uncompiled_copy(self.manifest()), callbacks=[*self.callbacks, *callbacks]).invoke(
            [*arguments, *(["--no-write-json"] if runs_nodes else []), *self._common_arguments(dbt_vars)]
        )
        if runs_nodes and hasattr(result.result, "write"):
            self.target_path.mkdir(parents=True, exist_ok=True)
            result.result.write(str(self.target_path / "run_results.json"))
        return result

    @property
    def target_path(self) -> Path:
        """Where dbt writes the project's artifacts: DBT_TARGET_PATH, else target/, under the project."""
        return self.project_dir / os.environ.get("DBT_TARGET_PATH", "target")

    def run_checked(self, arguments: list[str]) -> None:
        """One dbt command, failing loudly (what cdc_lakehouse.seeds expects)."""
        result = self.invoke(*arguments)
        if not result.success:
            raise DbtCommandError(f"dbt {' '.join(arguments)} failed: {result.exception or 'see its output above'}")

    def manifest(self):
        fingerprint = self._files_fingerprint()
        if self._manifest is None or fingerprint != self._fingerprint:
            from dbt.cli.main import dbtRunner

            result = dbtRunner().invoke(["parse", "--quiet", *self._common_arguments()])
            if not result.success:
                raise DbtCommandError(f"dbt parse failed: {result.exception}")
            self._manifest, self._fingerprint, self._selections = result.result, fingerprint, {}
            self._manifest.build_parent_and_child_maps()
        return self._manifest

    def selected(self, selector: str) -> list[str]:
        """The unique ids a YAML selector selects, as dbt resolves it (once per parse)."""
        if selector not in self._selections:
            self._selections[selector] = self.listed("--selector", selector)
        return self._selections[selector]

    def listed(self, *selection: str) -> list[str]:
        """The unique ids dbt selects with these arguments (`dbt ls`)."""
        listing = ("--output", "json", "--output-keys", "unique_id", "--log-level", "none")
        result = self.invoke("ls", *selection, *listing)
        if not result.success:
            raise DbtCommandError(f"dbt ls {' '.join(selection)} failed: {result.exception}")
        return [json.loads(line)["unique_id"] for line in result.result]

    def _common_arguments(self, dbt_vars: dict | None = None) -> list[str]:
        arguments = ["--project-dir", str(self.project_dir), "--profiles-dir", str(self.profiles_dir)]
        arguments += ["--target", self.target] if self.target else []
        merged = {**self.dbt_vars, **(dbt_vars or {})}
        return arguments + (["--vars", json.dumps(merged)] if merged else [])

    def _files_fingerprint(self) -> tuple:
        return tuple(sorted(_stats(self.project_dir, PARSED_PATHS)))


def uncompiled_copy(manifest):
    """The parsed manifest with nodes of its own. A command compiles into the nodes of the manifest it is given
    (each model's SQL of its batch, ephemeral models' CTEs, each marked as done, which a second command would
    reuse), so each command gets fresh copies of them and shares the rest. Built field by field: dbt-core
    1.11's Manifest.deepcopy and pickling (__reduce_ex__) miss fields and misplace the lookups."""
    from dbt.contracts.graph.manifest import Manifest

    shared = {field.name: getattr(manifest, field.name) for field in dataclasses.fields(Manifest)}
    fields = {name: value for name, value in shared.items() if not name.startswith("_")}
    fields["nodes"] = {unique_id: copy.deepcopy(node) for unique_id, node in manifest.nodes.items()}
    fields["unit_tests"] = {unique_id: copy.deepcopy(test) for unique_id, test in manifest.unit_tests.items()}
    return Manifest(**fields)


def _stats(root: Path, names: Iterable[str]) -> Iterable[tuple[str, int, int]]:
    for name in names:
        path = root / name
        for file in path.rglob("*") if path.is_dir() else [path]:
            if file.is_file():
                stat = file.stat()
                yield str(file.relative_to(root)), stat.st_mtime_ns, stat.st_size
