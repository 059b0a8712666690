"""What the project's commands share on their command line: a parser that reports a bad argument as one line."""

import argparse
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """An argument parser that raises `error_class(message)` where argparse prints its usage and exits: each
    command reports it as one line on stderr, exit code 2, before it does anything."""

    def __init__(self, *args, error_class: type[Exception], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.error_class = error_class

    def error(self, message: str) -> NoReturn:
        raise self.error_class(message)


def non_negative(text: str) -> int:
    """A whole number, zero or more (an argparse type)."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {number}")
    return number


def add_project_dir_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project-dir",
        help="the dbt project, as dbt takes it (default: DBT_PROJECT_DIR, else the nearest folder from here up "
        "that holds a dbt_project.yml, else the project this package was installed from)",
    )
