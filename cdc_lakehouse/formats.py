"""The source formats the project reads: the registry `cdc_formats` of dbt_project.yml, the one list."""

from pathlib import Path

import yaml

DBT_PROJECT = Path(__file__).resolve().parent.parent / "dbt_project.yml"


def _registry(project_file: Path = DBT_PROJECT) -> dict[str, dict]:
    return yaml.safe_load(project_file.read_text())["vars"]["cdc_formats"]


def registered_formats(project_file: Path = DBT_PROJECT) -> tuple[str, ...]:
    return tuple(_registry(project_file))


def format_traits(source_format: str, project_file: Path = DBT_PROJECT) -> dict[str, str]:
    """A format's traits in the registry with the defaults of the macro cdc_format_trait: staging (the
    format's name unless shared), events (the staging name unless shared), and waits_for when it has one."""
    traits = _registry(project_file)[source_format] or {}
    staging = traits.get("staging", source_format)
    return {"staging": staging, "events": traits.get("events", staging), **traits}


SOURCE_FORMATS: tuple[str, ...] = registered_formats()
