"""The source formats the project reads: the registry `cdc_formats` of dbt_project.yml, the one list."""

from pathlib import Path

import yaml

DBT_PROJECT = Path(__file__).resolve().parent.parent / "dbt_project.yml"


def _registry(project_file: Path = DBT_PROJECT) -> dict[str, dict]:
    return yaml.safe_load(project_file.read_text())["vars"]["cdc_formats"]


def registered_formats(project_file: Path = DBT_PROJECT) -> tuple[str, ...]:
    return tuple(_registry(project_file))


SOURCE_FORMATS: tuple[str, ...] = registered_formats()
