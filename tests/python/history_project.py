"""The project's models run in-process on the test Spark session, in their own schema, for history tests.

Shared by test_history.py (hand-written scenarios), test_history_property.py (generated change streams
of several formats), test_aliyun_update_pairing.py (StreamX update halves on streams) and
test_typed_tables.py (typed models built on it).
"""

import json
import os
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from helpers import PROJECT_DIR, dbt_in_process

SCHEMA = "history_test"

# What the first run builds: the change log, history and current state, with their seeds.
CHANGE_LOG = ("+cdc_current", "+cdc_redeliveries", "cdc_quarantine")
# The models every change passes through on its way to the history; cdc_current is their view.
COMMON_PATH_TABLES = (
    "int_cdc_events__landed",
    "cdc_events",
    "int_cdc_history__key_steps",
    "cdc_task_tables",
    "cdc_history",
    "cdc_redeliveries",
)


@cache
def registry_traits() -> dict[str, dict]:
    """Each registered format's staging, events and waits_for, as the macro cdc_format_trait gives them: dbt
    compiles the macro (no Spark), so the tests hold no second copy of the registry's defaults."""
    from dbt.cli.main import dbtRunner

    traits = "{'staging': cdc_format_trait(f, 'staging'), 'events': cdc_format_trait(f, 'events'),"
    traits += " 'waits_for': cdc_format_trait(f, 'waits_for')}"
    sql = f"{{% set t = {{}} %}}{{% for f in var('cdc_formats') %}}{{% do t.update({{f: {traits}}}) %}}{{% endfor %}}"
    with tempfile.TemporaryDirectory() as work:
        paths = ["--project-dir", str(PROJECT_DIR), "--target-path", f"{work}/target", "--log-path", f"{work}/logs"]
        result = dbtRunner().invoke(["compile", "--inline", sql + "{{ tojson(t) }}", *paths, "--quiet"])
    assert result.success, f"dbt compile of the registry's traits failed: {result.exception}"
    return json.loads(result.result.results[0].node.compiled_code)


def format_path_tables(source_format: str) -> tuple[str, ...]:
    """The stored models of a format between the landing table and cdc_events, named by the registry's
    rules (dbt_project.yml, cdc_formats): its staging model, or the envelopes, groups and entries of a format whose
    messages wait for their group; then the update pairs of one whose halves wait for their partner."""
    traits = registry_traits()[source_format]
    staging, waits_for = traits["staging"], traits.get("waits_for")
    if waits_for == "envelope_group":
        tables = (f"stg_{staging}__envelopes", f"stg_{staging}__groups", f"stg_{staging}__entries")
    else:
        tables = (f"stg_{staging}__messages",)
    return (*tables, f"int_{traits['events']}__update_pairs") if waits_for == "update_pair" else tables


class DbtProject:
    """The project's models run in-process against the test session, in their own schema.

    Only the formats of the last reset are enabled (var cdc_enabled_formats), so a run builds their models
    alone. The first reset loads the seeds the change log reads (of every format, so a later reset to other
    formats finds them) and the first run builds the change log; a reset then drops only the tables a change
    of the previous and of the new formats passes through, and later runs select just those: the seeds,
    cdc_quarantine and the other stored models stay, which saves most of a run. Typed tables need the type
    seeds too: `type_mappings` loads them once.
    """

    def __init__(self, spark, root: Path, dbt_vars: dict | None = None) -> None:
        self.spark = spark
        self.root = root
        self.dbt_vars = dbt_vars
        # The project whose models run: this one, or a copy cdc-scaffold writes typed models into.
        self.project_dir = PROJECT_DIR
        self.built = False
        self.source_formats: tuple[str, ...] = ("huawei_drs_json",)
        self.type_mappings_built = False

    def path_tables(self, source_formats: tuple[str, ...] | None = None) -> tuple[str, ...]:
        formats = source_formats or self.source_formats
        return (
            *(table for source_format in formats for table in format_path_tables(source_format)),
            *COMMON_PATH_TABLES,
        )

    def reset(self, *source_formats: str) -> None:
        """An empty landing table and history for changes of these formats (default: Huawei DRS JSON)."""
        from cdc_lakehouse.landing_table import LANDING_TABLE, ensure_landing_table

        source_formats = source_formats or ("huawei_drs_json",)
        if self.built:
            for table in dict.fromkeys((*self.path_tables(), *self.path_tables(source_formats))):
                self.spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{table}")
        else:
            self.spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
            ensure_landing_table(self.spark)
            self.dbt("seed", "--select", *CHANGE_LOG, every_format=True)
        self.source_formats = source_formats
        self.spark.sql(f"DELETE FROM {LANDING_TABLE}")

    def land(self, topic: str, messages: list[bytes], partition: int = 0) -> None:
        """One landing commit of messages in the format of the last reset (of one format)."""
        from cdc_lakehouse.landing import land

        (source_format,) = self.source_formats
        land(self.spark, source_format, topic, partition, messages)

    def dbt(self, *arguments: str, check: bool = True, every_format: bool = False):
        """A dbt command with the formats of the last reset enabled, or all of them."""
        enabled = {} if every_format else {"cdc_enabled_formats": list(self.source_formats)}
        dbt_vars = {**(self.dbt_vars or {}), **enabled}
        return dbt_in_process(
            self.spark, self.root, *arguments, dbt_vars=dbt_vars, check=check, project_dir=self.project_dir
        )

    def run(self, *also: str) -> None:
        """A run of the models changes pass through, and of the models `also` names, in one batch."""
        if self.built:
            self.dbt("run", "--select", *self.path_tables(), "cdc_current", *also)
        else:
            self.dbt("run", "--select", *CHANGE_LOG, *also)
            self.built = True

    def type_mappings(self) -> None:
        """The type seeds and cdc_type_mappings, which the typed tables read, once per session."""
        if not self.type_mappings_built:
            self.dbt("seed", "--exclude", *CHANGE_LOG, every_format=True)
            self.dbt("run", "--select", "cdc_type_mappings")
            self.type_mappings_built = True


# One project per Spark session: the modules that use it share the seeds and the first build.
_PROJECTS: dict[int, DbtProject] = {}


def project_in_schema(spark, tmp_path_factory, dbt_vars: dict | None = None) -> Iterator[DbtProject]:
    """The session's DbtProject, writing to SCHEMA with these dbt vars, for a module fixture (`yield from`).

    The first module to use it pays for the seeds and the first build; a later module starts from a reset.
    """
    saved = os.environ.get("CDC_SCHEMA")
    os.environ["CDC_SCHEMA"] = SCHEMA
    project = _PROJECTS.get(id(spark))
    if project is None:
        project = _PROJECTS[id(spark)] = DbtProject(spark, tmp_path_factory.mktemp("history_dbt"))
    project.dbt_vars = dbt_vars
    try:
        yield project
    finally:
        if saved is None:
            os.environ.pop("CDC_SCHEMA", None)
        else:
            os.environ["CDC_SCHEMA"] = saved
