"""cdc-maintain: table maintenance between scheduled runs (README, "Operating it").

Runs two of the project's operations in this process: `dbt run-operation cdc_expire_landing` (landing
retention: messages older than --keep-days that every model has read), holding the landing table's lease,
which every landing commit takes, so that an ingest beside waits for it instead of failing it; then
`dbt run-operation cdc_maintain`: the run log's old batches, then OPTIMIZE and VACUUM (keeping --retain-hours
of removed files, the time-travel window) of every table the project writes and of landing, whose files of
commits some model has not read are kept whatever their age. Each operation holds the target schema's lease
(a scheduled run waits for it) on a shared metastore.
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
    from cdc_lakehouse.scheduled_build import BuildArgumentError, parse_vars

    try:
        args = _parser().parse_args(argv)
        dbt_vars = parse_vars(args.vars)
    except (MaintenanceError, BuildArgumentError) as exc:
        print(f"cdc-maintain: error: {exc}", file=sys.stderr)
        return 2
    from cdc_lakehouse.dbt_project import DbtCommandError, DbtProject
    from cdc_lakehouse.landing_table import LANDING_SCHEMA
    from cdc_lakehouse.schema_lease import SchemaHeld, schema_lease
    from cdc_lakehouse.session import open_session

    project = DbtProject(args.project_dir, target=args.target, dbt_vars=dbt_vars)

    def operation(macro: str, arguments: dict) -> None:
        project.run_checked(["run-operation", macro, "--args", json.dumps(arguments)])

    spark = open_session(project.spark_settings())
    try:
        with schema_lease(spark, f"{dbt_vars.get('landing_schema', LANDING_SCHEMA)}.cdc_raw"):
            operation("cdc_expire_landing", {"keep_days": args.keep_days})
        operation("cdc_maintain", {"retain_hours": args.retain_hours, "keep_days": args.keep_days})
    except (DbtCommandError, SchemaHeld) as exc:
        print(f"cdc-maintain: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
