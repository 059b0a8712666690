"""What the orchestrators share with `make`: the dbt project, its profile, and the variables the Makefile
exports, as absolute paths (a task's working directory is the scheduler's choice, so nothing may be relative).

The dbt project is found as dbt and the project's commands find it (cdc_lakehouse.dbt_project): the
scheduler's DBT_PROJECT_DIR, else the folder it was started from when that is a dbt project, else the
project this package was installed from. The jars are the installation's.
"""

import os
import sys
from pathlib import Path

from cdc_lakehouse import PROJECT_DIR as INSTALLED_DIR
from cdc_lakehouse.dbt_project import resolve_profiles_dir, resolve_project_dir

PROJECT_DIR = resolve_project_dir()
PROFILES_DIR = resolve_profiles_dir(PROJECT_DIR)
PROFILE_NAME = "cdc_lakehouse"
VENV_BIN = Path(sys.executable).parent


def project_environment() -> dict[str, str]:
    """The Makefile's exports and the embedded warehouse of `make run`, unless the environment sets them."""
    defaults = {
        "DBT_PROJECT_DIR": PROJECT_DIR,
        "DBT_PROFILES_DIR": PROFILES_DIR,
        "CDC_JARS_DIR": INSTALLED_DIR / "jars" / "lib",
        "PYSPARK_PYTHON": sys.executable,
        "CDC_WAREHOUSE": PROJECT_DIR / "warehouse",
        "CDC_INGEST_CONFIG": PROJECT_DIR / "ingest.yml",
    }
    return {name: os.environ.get(name) or str(default) for name, default in defaults.items()}


def use_project_environment() -> None:
    """Set them in this process, for dbt run in process and for the commands it starts, with the project's
    commands (dbt, cdc-*) first on the PATH."""
    os.environ.update(project_environment())
    paths = os.environ.get("PATH", "").split(os.pathsep)
    if str(VENV_BIN) not in paths:
        os.environ["PATH"] = os.pathsep.join([str(VENV_BIN), *paths])
