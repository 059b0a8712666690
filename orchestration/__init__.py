"""Scheduling the project: an Airflow DAG with astronomer-cosmos and Dagster assets with dagster-dbt (README,
"Scheduling"). Optional extras: `pip install -e .[airflow]`, `.[dagster]`."""
