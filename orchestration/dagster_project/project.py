"""The dbt project as dagster-dbt sees it, apart from the definitions: `dagster-dbt project
prepare-and-package --file orchestration/dagster_project/project.py` parses it into the manifest the
definitions are built from (a deployment does so at build time; `dagster dev` does it on load)."""

import os

from dagster_dbt import DbtProject

from orchestration.environment import PROFILES_DIR, PROJECT_DIR, use_project_environment

use_project_environment()
project = DbtProject(
    project_dir=PROJECT_DIR,
    profiles_dir=PROFILES_DIR,
    target=os.environ.get("CDC_TARGET", "local"),
    target_path=os.environ.get("DBT_TARGET_PATH", "target"),
)
project.prepare_if_dev()
