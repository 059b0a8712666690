"""Scheduling the project: Airflow DAGs and Dagster assets that run the project's own commands, one process
and one batch per scheduled run (README, "Scheduling"). Optional extras: `pip install -e .[airflow]`,
`.[dagster]`."""
