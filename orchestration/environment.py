"""What the orchestrators share with `make`: the project, its dbt profile, and the variables the Makefile
exports, as absolute paths (a task's working directory is the scheduler's choice, so nothing may be relative)."""

import os
import sys
from pathlib import Path

from cdc_lakehouse import PROJECT_DIR

PROFILES_DIR = PROJECT_DIR / "profiles"
PROFILE_NAME = "cdc_lakehouse"
VENV_BIN = Path(sys.executable).parent


def project_environment() -> dict[str, str]:
    """The Makefile's exports and the embedded warehouse of `make run`, unless the environment sets them."""
    defaults = {
        "DBT_PROFILES_DIR": PROFILES_DIR,
        "CDC_JARS_DIR": PROJECT_DIR / "jars" / "lib",
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
