"""Driver-side code: the Spark session dbt and the commands share, the landing table, and the commands
``cdc-land`` (land messages) and ``cdc-scaffold`` (typed table models). Executors never import it."""

from pathlib import Path

# The dbt project this package belongs to (installed editable from the checkout: `make setup`).
PROJECT_DIR = Path(__file__).resolve().parent.parent
