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
