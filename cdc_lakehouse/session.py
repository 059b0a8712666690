"""The Spark session dbt and cdc-land share: created from the dbt profile's settings, then prepared
(project UDFs registered, the landing table created)."""

import glob
import os
import sys
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from cdc_lakehouse import PROJECT_DIR
from cdc_lakehouse.landing_table import ensure_landing_table
from python_udfs.spark_udfs import register_udfs

PROFILE_NAME = "cdc_lakehouse"

_prepared: "weakref.WeakSet[SparkSession]" = weakref.WeakSet()
_lock = threading.Lock()


def open_session(server_side_parameters: Mapping[str, str]) -> SparkSession:
    """Get or create the session exactly as dbt-spark's session method does, then prepare it once."""
    settings = _with_jar_globs_expanded(server_side_parameters)
    _check_archives(settings)
    # Python workers run the interpreter that has python_udfs and pyarrow: spark.pyspark.python (the cluster
    # profile's packed environment), else this one. PySpark reads it from the environment, not the conf.
    if "spark.pyspark.python" in settings:
        os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    with _lock:
        if spark not in _prepared:
            _prepare(spark)
            _prepared.add(spark)
    return spark


def _with_jar_globs_expanded(settings: Mapping[str, str]) -> dict[str, str]:
    """Spark puts a spark.jars glob on the driver's class path but cannot ship it to executors, and the JVM
    reads no glob but `dir/*` in a class path. A relative pattern that matches nothing here (a command run in
    a dbt project of its own, README "Building on it") is the installation's: the jars come with it."""
    settings = dict(settings)
    for key, separator in (("spark.jars", ","), ("spark.driver.extraClassPath", os.pathsep)):
        jars: list[str] = []
        for pattern in filter(None, settings.get(key, "").split(separator)):
            pattern = pattern.strip()
            if glob.has_magic(pattern) and not Path(pattern).is_absolute() and not glob.glob(pattern):
                pattern = str(PROJECT_DIR / pattern)
            matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
            if not matches:
                raise FileNotFoundError(f"{key}: no jar matches {pattern} (run `make jars`)")
            jars.extend(matches)
        if jars:
            settings[key] = separator.join(jars)
    return settings


def _check_archives(settings: Mapping[str, str]) -> None:
    """A missing local archive would only fail on the executors, task after task."""
    for archive in filter(None, settings.get("spark.archives", "").split(",")):
        path = archive.strip().split("#")[0]
        if "://" not in path and not Path(path).is_file():
            raise FileNotFoundError(f"spark.archives: {path} does not exist (run `make executor-env`)")


def _prepare(spark: SparkSession) -> None:
    spark.sparkContext.setLogLevel(os.environ.get("CDC_SPARK_LOG_LEVEL", "ERROR"))
    # Delta 4.4 logs at ERROR level, on every read of a table with column mapping and deletion vectors (the
    # typed tables), that it does not push its deleted-rows filter down into Parquet; the rows are filtered
    # after the scan all the same ("Failed to translate filter EqualTo(__delta_internal_is_row_deleted,0)").
    jvm = spark.sparkContext._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        "org.apache.spark.sql.delta.DeltaParquetFileFormat", jvm.org.apache.logging.log4j.Level.FATAL
    )
    register_udfs(spark)
    ensure_landing_table(spark)


def profile_spark_settings(target: str | None = None, profiles_dir: str | None = None) -> dict[str, str]:
    """The rendered server_side_parameters of a target of the project's dbt profile."""
    from dbt.adapters.factory import load_plugin
    from dbt.config.profile import Profile, read_profile
    from dbt.config.renderer import ProfileRenderer
    from dbt.flags import set_from_args
    from dbt_common.context import set_invocation_context

    from cdc_lakehouse.dbt_project import resolve_profiles_dir, resolve_project_dir

    profiles_dir = profiles_dir or str(resolve_profiles_dir(resolve_project_dir()))
    set_invocation_context(os.environ)
    set_from_args(_NoArgs(), {})
    load_plugin("spark")
    profile = Profile.from_raw_profiles(
        read_profile(profiles_dir), PROFILE_NAME, ProfileRenderer({}), target_override=target
    )
    return dict(profile.credentials.server_side_parameters)


class _NoArgs:
    """dbt's global flags, left at their defaults."""

    def __getattr__(self, name: str) -> None:
        return None
