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


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--since", "yesterday"], "--since 'yesterday': expected a duration (24h, 30m, 2d) or an ISO 8601 time"),
        (["--runs", "-3"], "argument --runs: must not be negative: -3"),
        (["--watch"], "unrecognized arguments: --watch"),
    ],
)
def test_cdc_status_refuses_a_bad_argument_in_one_line(arguments, message, capsys):
    from cdc_lakehouse.status import main as status

    assert status(arguments) == 2
    assert capsys.readouterr().err == f"cdc-status: error: {message}\n"


@pytest.mark.parametrize(
    ("command", "arguments", "message"),
    [
        ("cdc-run", ["--metrics-port", "-1"], "argument --metrics-port: must not be negative: -1"),
        ("cdc-build", ["--metrics-port", "9464"], "unrecognized arguments: --metrics-port 9464"),
    ],
)
def test_the_metrics_options_are_checked_in_one_line(command, arguments, message, capsys, monkeypatch):
    """A one-shot cdc-build has nothing to serve: it writes a textfile."""
    from cdc_lakehouse.runner import main as run
    from cdc_lakehouse.scheduled_build import main as build

    monkeypatch.setenv("CDC_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    main = {"cdc-run": run, "cdc-build": build}[command]
    assert main(arguments) == 2
    assert capsys.readouterr().err == f"{command}: error: {message}\n"
