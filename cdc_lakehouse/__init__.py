"""Driver-side code: the Spark session dbt and the commands share, the landing table, and the commands
``cdc-land`` (land messages) and ``cdc-scaffold`` (typed table models). Executors never import it."""
