"""Seeds load when they change, not on every run (README, "Scheduled runs and the audit").

`make seeds`, `make build` and the Airflow DAG call this before a scheduled run: when the seed files or
cdc_type_mappings (the one model built from seeds alone) differ from what the warehouse last loaded, it
runs `dbt seed` and `dbt run --select cdc_type_mappings` in this process (one Spark session), then records
their fingerprint in the warehouse folder. A new warehouse has no fingerprint: it loads them.
"""

import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from cdc_lakehouse import PROJECT_DIR

SEED_INPUTS = ("seeds", "models/types/cdc_type_mappings.sql")


def seeds_fingerprint(project_dir: Path = PROJECT_DIR) -> str:
    digest = hashlib.sha256()
    for name in SEED_INPUTS:
        root = project_dir / name
        for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if path.is_file():
                digest.update(path.relative_to(project_dir).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def fingerprint_file(environment: dict[str, str]) -> Path:
    """In the warehouse folder (CDC_WAREHOUSE, as the profile reads it), one per target schema."""
    warehouse = Path(environment.get("CDC_WAREHOUSE", "warehouse"))
    return warehouse / f".seeds-loaded-{environment.get('CDC_SCHEMA', 'cdc')}"


def load_seeds_if_changed(dbt: Callable[[list[str]], None], environment: dict[str, str] | None = None) -> bool:
    """Load the seeds through `dbt` (a function running one dbt command) unless loaded as they are; whether it did."""
    environment = dict(os.environ) if environment is None else environment
    stamp, fingerprint = fingerprint_file(environment), seeds_fingerprint()
    if stamp.is_file() and stamp.read_text() == fingerprint:
        return False
    dbt(["seed"])
    dbt(["run", "--select", "cdc_type_mappings"])
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(fingerprint)
    return True


def run_dbt(arguments: list[str]) -> None:
    """One dbt command in this process, on the project, failing loudly."""
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke([*arguments, "--project-dir", str(PROJECT_DIR)])
    if not result.success:
        raise RuntimeError(f"dbt {' '.join(arguments)} failed: {result.exception or 'see its output above'}")


def main() -> int:
    loaded = load_seeds_if_changed(run_dbt)
    print("seeds loaded" if loaded else "seeds unchanged since they were loaded: not reloaded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
