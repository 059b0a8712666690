"""The commands' command lines: a bad argument is one line on stderr and exit code 2, before anything runs."""

import pytest

from cdc_lakehouse.maintenance import main as maintain


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--keep-days", "-1"], "argument --keep-days: must not be negative: -1"),
        (["--retain-hours", "a week"], "argument --retain-hours: not a whole number: 'a week'"),
        (["--vacuum"], "unrecognized arguments: --vacuum"),
    ],
)
def test_cdc_maintain_refuses_a_bad_argument_in_one_line(arguments, message, capsys):
    assert maintain(arguments) == 2
    assert capsys.readouterr().err == f"cdc-maintain: error: {message}\n"


def test_the_commands_take_the_dbt_project_as_dbt_does(tmp_path, monkeypatch):
    """--project-dir, else DBT_PROJECT_DIR, else the nearest folder from here up with a dbt_project.yml, else
    the installed project; the profile from DBT_PROFILES_DIR, else the project's profiles/, else dbt's default."""
    from cdc_lakehouse import PROJECT_DIR
    from cdc_lakehouse.dbt_project import resolve_profiles_dir, resolve_project_dir

    team, other = tmp_path / "team_project", tmp_path / "other_project"
    for project in (team, other):
        (project / "models" / "marts").mkdir(parents=True)
        (project / "dbt_project.yml").write_text("name: cdc_lakehouse\n")
    (team / "profiles").mkdir()
    (team / "profiles" / "profiles.yml").write_text("cdc_lakehouse: {}\n")
    monkeypatch.delenv("DBT_PROJECT_DIR", raising=False)
    monkeypatch.delenv("DBT_PROFILES_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    monkeypatch.chdir(team / "models" / "marts")
    assert resolve_project_dir() == team
    assert resolve_project_dir(str(other)) == other
    monkeypatch.setenv("DBT_PROJECT_DIR", str(other))
    assert resolve_project_dir() == other
    assert resolve_project_dir(str(team)) == team
    monkeypatch.delenv("DBT_PROJECT_DIR")
    monkeypatch.chdir(tmp_path)
    assert resolve_project_dir() == PROJECT_DIR

    assert resolve_profiles_dir(team) == team / "profiles"
    assert resolve_profiles_dir(other) == tmp_path / "home" / ".dbt"
    (tmp_path / "profiles.yml").write_text("cdc_lakehouse: {}\n")
    assert resolve_profiles_dir(other) == tmp_path
    monkeypatch.setenv("DBT_PROFILES_DIR", str(tmp_path / "elsewhere"))
    assert resolve_profiles_dir(team) == tmp_path / "elsewhere"
