"""dbt plugin: every dbt command that opens a Spark session finds the project's UDFs registered in it.

dbt imports top-level modules named ``dbt_*`` and initializes the plugins they list. Initializing
must not start Spark (``dbt parse``, ``ls`` and ``compile`` never open a connection), so the plugin only
wraps dbt-spark's session cursor: the first statement dbt executes creates the session from the
profile's server_side_parameters, as dbt-spark would, and prepares it (cdc_lakehouse.session); the first
statement of a command that writes takes the schema's lease on a shared metastore (cdc_lakehouse.schema_lease).

dbt offers no hook before a statement, so this wraps a method of dbt-spark: fenced like the macro overrides
(CONTRIBUTING.md, "The dbt-override fence"). WRAPS names the method as it was when the wrapper was written;
tests/python/test_overrides.py fails when the installed dbt-spark's differs.
"""

from dbt.plugins.manager import dbtPlugin

# (package, version, module file under site-packages, class.method, sha256 prefix of the method's source)
WRAPS = ("dbt-spark", "1.11.0", "dbt/adapters/spark/session.py", "Cursor.execute", "a9ed901c0957")


class CdcUdfPlugin(dbtPlugin):
    def initialize(self) -> None:
        from dbt.adapters.spark import session as dbt_spark_session

        cursor = dbt_spark_session.Cursor
        if getattr(cursor.execute, "prepares_cdc_session", False):
            return
        execute = cursor.execute

        def execute_in_prepared_session(self, sql, *parameters):
            from cdc_lakehouse.schema_lease import hold_for_dbt_command
            from cdc_lakehouse.session import open_session

            hold_for_dbt_command(open_session(self.server_side_parameters))
            return execute(self, sql, *parameters)

        execute_in_prepared_session.prepares_cdc_session = True
        cursor.execute = execute_in_prepared_session


plugins = [CdcUdfPlugin]
