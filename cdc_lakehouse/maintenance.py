"""cdc-maintain: table maintenance between scheduled runs (README, "Operating it").

Runs the project's `dbt run-operation cdc_maintain` in this process: landing retention (messages older than
--keep-days that every model has read), the run log's old batches, then OPTIMIZE and VACUUM (keeping
--retain-hours of removed files, the time-travel window) of every table the project writes and of landing,
whose files of commits some model has not read are kept whatever their age. Run it when no build runs.
"""

import argparse
import json
import sys

from cdc_lakehouse.command_line import OneLineParser, add_project_dir_argument, non_negative

# Delta's own default retention of removed files (delta.deletedFileRetentionDuration): a week of time travel.
DEFAULT_RETAIN_HOURS = 168
DEFAULT_KEEP_DAYS = 30


class MaintenanceError(Exception):
    """A command line cdc-maintain cannot run with: reported on one line, nothing is done."""


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="cdc-maintain", description=__doc__.split("\n\n")[0], error_class=MaintenanceError)
    parser.add_argument(
        "--retain-hours",
        type=non_negative,
        default=DEFAULT_RETAIN_HOURS,
        help=f"removed files kept this long, the time-travel window (default: {DEFAULT_RETAIN_HOURS})",
    )
    parser.add_argument(
        "--keep-days",
        type=non_negative,
        default=DEFAULT_KEEP_DAYS,
        help=f"landed messages every model read, and run log batches, kept this long (default: {DEFAULT_KEEP_DAYS})",
    )
    add_project_dir_argument(parser)
    parser.add_argument("--target", help="dbt profile target (default: the profile's)")
    parser.add_argument("--vars", help="dbt vars, as for the scheduled runs (YAML)")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except MaintenanceError as exc:
        print(f"cdc-maintain: error: {exc}", file=sys.stderr)
        return 2
    from dbt.cli.main import dbtRunner

    from cdc_lakehouse.dbt_project import resolve_profiles_dir, resolve_project_dir

    project_dir = resolve_project_dir(args.project_dir)
    operation_args = json.dumps({"retain_hours": args.retain_hours, "keep_days": args.keep_days})
    command = ["run-operation", "cdc_maintain", "--args", operation_args, "--project-dir", str(project_dir)]
    command += ["--profiles-dir", str(resolve_profiles_dir(project_dir))]
    command += ["--target", args.target] if args.target else []
    command += ["--vars", args.vars] if args.vars else []
    result = dbtRunner().invoke(command)
    if not result.success:
        print(f"cdc-maintain: error: {result.exception or 'dbt run-operation cdc_maintain failed'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
