"""What the project's commands share on their command line: a parser that reports a bad argument as one line."""

import argparse
from pathlib import Path
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


def add_metrics_arguments(parser: argparse.ArgumentParser, serves: bool) -> None:
    """Prometheus metrics (README, "Operating it"): served by a long-lived process, written to a file by any."""
    if serves:
        parser.add_argument(
            "--metrics-port",
            type=non_negative,
            help="serve Prometheus metrics over HTTP on this port while running (default: none)",
        )
        parser.add_argument(
            "--metrics-host", default="0.0.0.0", help="the address the metrics are served on (default: 0.0.0.0)"
        )
    parser.add_argument(
        "--metrics-textfile",
        type=Path,
        metavar="FILE",
        help="write the metrics in Prometheus's text format to FILE (a .prom file for node_exporter's textfile "
        "collector) after each run, going on from the counters the file holds (default: "
        "$CDC_METRICS_TEXTFILE_DIR/<command>.prom when that is set, else none)",
    )
