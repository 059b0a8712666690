"""The typed views of a source table (models/tables/, shop.orders of Huawei DRS JSON) over cdc_history.

Four batches of hand-written DRS JSON messages of shop.orders, each followed by one run of the models they
pass through and the typed views; the expected rows are written from DRS's documented behaviour: a partial
update keeps the other columns, a key change deletes the old key, a delete removes the key from the current
view, a message delivered again at a new offset is no new version, a column added by DDL appears with NULL
in the versions from before, a column widened by DDL (int to bigint) reads every version wider, and a column
changed to a type its earlier values do not parse as (varchar to int) reads NULL in those versions. The
history's batch test (cdc_versions_hold), which the views inherit, fails on a repeated version and a null
flag. The same batches and rows again with the history stored (materialization cdc_stored_history): a Delta
table partitioned by is_current, merged by the batch whose columns it has and created again by those that add
or retype one, which cdc-maintain maintains.

Then two Canal JSON tables scaffolded by cdc-scaffold into a copy of the project, built, evolved by an
ALTER TABLE and refreshed: one named in Chinese (database 商城, table 订单, Chinese column names), and
shop.odd, whose columns have names any of MySQL, PostgreSQL, Oracle or SQL Server allow quoted (spaces,
,;{}()=, quotes, a backtick, a dot, SQL comment and Jinja markers, a leading #), one of them widened and four
added by the DDL.
"""

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
import yaml
from helpers import PROJECT_DIR, mark_stored_history, project_copy, project_without_typed_tables
from history_project import SCHEMA, project_in_schema
from pyspark.sql import functions as F

from cdc_lakehouse.scaffold import main as scaffold

# Several dbt runs: make test-slow, beside make test in CI.
pytestmark = pytest.mark.slow

TOPIC = "huawei_drs_json.typed_tables"
T0 = datetime(2024, 3, 1, 8, 0, 0)
TYPED_MODELS = ("shop__orders__huawei_drs_json__history", "shop__orders__huawei_drs_json__current")
# The typed views and what they read their column types from.
TYPED_RUN = ("cdc_observed_column_types", "cdc_vendor_types", "cdc_table_columns", *TYPED_MODELS)
COLUMNS = {"id": ("int", 4), "a": ("varchar", 12), "b": ("varchar", 12)}
# c and a DATETIME column added by DDL: a Delta table gains a timestamp_ntz column only with that feature on.
WITH_C = {**COLUMNS, "c": ("varchar", 12), "shipped": ("datetime", 93)}
# id widened to bigint, a changed from varchar to int.
RETYPED = {**WITH_C, "id": ("bigint", -5), "a": ("int", 4)}


def drs_message(seq: int, operation: str, data=None, old=None, columns: dict = COLUMNS, table: str = "orders") -> bytes:
    """A Huawei DRS JSON message (MySQL form) of shop.<table> (orders), committed at T0 + seq seconds."""
    message = {
        "id": seq,
        "es": int(at(seq).timestamp() * 1000),
        "database": "shop",
        "table": table,
        "type": operation,
        "isDdl": False,
        "pkNames": ["id"],
        "mysqlType": {name: vendor for name, (vendor, _) in columns.items()},
        "sqlType": {name: jdbc for name, (_, jdbc) in columns.items()},
        "data": data,
        "old": old,
    }
    return json.dumps(message).encode()


def at(seq: int) -> datetime:
    return T0 + timedelta(seconds=seq)


def order(key: str, a, b) -> dict:
    return {"id": key, "a": a, "b": b}


BATCHES = [
    [drs_message(1, "INSERT", data=[order("1", "x", "y")]), drs_message(2, "INSERT", data=[order("2", "p", "q")])],
    [
        drs_message(3, "UPDATE", data=[{"id": "1", "a": "x2"}], old=[order("1", "x", "y")]),
        drs_message(4, "UPDATE", data=[order("3", "p", "q")], old=[order("2", "p", "q")]),
        drs_message(5, "INSERT", data=[order("4", "t", "u")]),
        drs_message(6, "DELETE", old=[order("4", "t", "u")]),
    ],
    [
        # Column c added by DDL before seq 7; seq 3 delivered again at a new offset.
        drs_message(
            7, "INSERT", data=[{**order("5", "n", "m"), "c": "new", "shipped": "2024-03-01 09:30:00"}], columns=WITH_C
        ),
        drs_message(8, "DELETE", old=[{**order("1", "x2", "y"), "c": None, "shipped": None}], columns=WITH_C),
        drs_message(3, "UPDATE", data=[{"id": "1", "a": "x2"}], old=[order("1", "x", "y")]),
    ],
    [drs_message(9, "INSERT", data=[{**order("6", "7", "w"), "c": "z"}], columns=RETYPED)],
]


def typed_rows(project, model: str, columns: tuple[str, ...]) -> list[tuple]:
    rows = project.spark.table(f"{SCHEMA}.{model}").select(*columns).collect()
    return sorted(map(tuple, rows), key=lambda row: (row[0], row[1] or T0))


def outcomes_of_tests(project, *models: str) -> dict[str, tuple[str, int]]:
    """The tests of these models: name -> (status, failures)."""
    results = project.dbt("test", "--select", *models, check=False).result.results
    return {
        result.node.name: (str(result.status), result.failures)
        for result in results
        if result.node.resource_type == "test"
    }


@pytest.fixture(scope="module")
def project(spark, tmp_path_factory):
    yield from project_in_schema(spark, tmp_path_factory)


@pytest.fixture(scope="module", params=["view", "stored"])
def after_each_batch(request, project, tmp_path_factory) -> list[dict]:
    """What the typed models hold after each batch's run: views over cdc_history, or (`stored`) the history
    stored as a Delta table (materialization cdc_stored_history) and the current view over it. The same
    rows are expected of both."""
    if request.param == "stored":
        project.project_dir = mark_stored_history(
            project_copy(tmp_path_factory.mktemp("stored_history") / "project"), TYPED_MODELS[0]
        )
    try:
        states = list(each_batch(project))
        history = f"{SCHEMA}.{TYPED_MODELS[0]}"
        writes = (
            # Auto compaction's commits (OPTIMIZE) aside.
            [
                row.operation
                for row in project.spark.sql(f"DESCRIBE HISTORY {history}").orderBy("version").collect()
                if row.operation != "OPTIMIZE"
            ]
            if request.param == "stored"
            else None
        )
        (shown,) = project.dbt(
            "show", "--inline", "select '{{ cdc_maintained_tables() | join(\",\") }}' as maintained"
        ).result.results
        maintained = shown.agate_table.rows[0][0].split(",")
        yield [
            {**state, "stored": request.param == "stored", "writes": writes, "maintained": maintained}
            for state in states
        ]
    finally:
        project.project_dir = PROJECT_DIR


def each_batch(project) -> Iterator[dict]:
    project.reset()
    for model in ("cdc_observed_column_types", "cdc_table_columns", *TYPED_MODELS):
        project.spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{model}")
    project.type_mappings()
    for number, batch in enumerate(BATCHES):
        project.land(TOPIC, batch)
        project.run(*TYPED_RUN)
        yield (
            {
                "kinds": {
                    model: project.spark.catalog.getTable(f"{SCHEMA}.{model}").tableType for model in TYPED_MODELS
                },
                "current": typed_rows(
                    project,
                    "shop__orders__huawei_drs_json__current",
                    ("pk", "valid_from", "op", "id", "a", "b", "is_deleted"),
                ),
                "history": typed_rows(
                    project,
                    "shop__orders__huawei_drs_json__history",
                    ("pk", "valid_from", "valid_to", "is_current", "is_deleted", "op", "id", "a", "b"),
                ),
                "types": {model: dict(project.spark.table(f"{SCHEMA}.{model}").dtypes) for model in TYPED_MODELS},
                "column_c": typed_rows(project, "shop__orders__huawei_drs_json__history", ("pk", "valid_from", "c"))
                if number >= 2
                else None,
                "column_shipped": typed_rows(
                    project, "shop__orders__huawei_drs_json__current", ("pk", "valid_from", "shipped")
                )
                if number >= 2
                else None,
            }
        )


def test_a_stored_history_is_merged_and_created_again_when_its_columns_change(project, after_each_batch):
    history, current = TYPED_MODELS
    stored = after_each_batch[0]["stored"]
    assert {state["kinds"][current] for state in after_each_batch} == {"VIEW"}
    assert {state["kinds"][history] != "VIEW" for state in after_each_batch} == {stored}
    # cdc-maintain compacts and vacuums a stored history, as every table the pipeline writes.
    assert (f"{SCHEMA}.{history}" in after_each_batch[0]["maintained"]) == stored
    assert f"{SCHEMA}.{current}" not in after_each_batch[0]["maintained"]
    if stored:
        (detail,) = project.spark.sql(f"DESCRIBE DETAIL {SCHEMA}.{history}").collect()
        assert (detail.format, detail.partitionColumns) == ("delta", ["is_current"])
        # Created by the first batch, merged by the second (the same columns), created again by the third (c and
        # shipped added) and the fourth (id and a retyped).
        assert after_each_batch[0]["writes"] == [
            "CREATE OR REPLACE TABLE AS SELECT",
            "MERGE",
            "CREATE OR REPLACE TABLE AS SELECT",
            "CREATE OR REPLACE TABLE AS SELECT",
        ]


def test_first_batch(after_each_batch):
    assert after_each_batch[0]["current"] == [
        ('["1"]', at(1), "c", 1, "x", "y", False),
        ('["2"]', at(2), "c", 2, "p", "q", False),
    ]


def test_updates_key_changes_and_deletes(after_each_batch):
    assert after_each_batch[1]["current"] == [
        # The partial update keeps b.
        ('["1"]', at(3), "u", 1, "x2", "y", False),
        # Key 2 became key 3: key 2's row left; key 4 was inserted and deleted in the batch: never current.
        ('["3"]', at(4), "u", 3, "p", "q", False),
    ]
    assert after_each_batch[1]["history"] == [
        ('["1"]', at(1), at(3), False, False, "c", 1, "x", "y"),
        ('["1"]', at(3), None, True, False, "u", 1, "x2", "y"),
        ('["2"]', at(2), at(4), False, False, "c", 2, "p", "q"),
        ('["2"]', at(4), None, True, True, "u", 2, "p", "q"),
        ('["3"]', at(4), None, True, False, "u", 3, "p", "q"),
        ('["4"]', at(5), at(6), False, False, "c", 4, "t", "u"),
        ('["4"]', at(6), None, True, True, "d", 4, "t", "u"),
    ]


def test_an_added_column_is_null_in_the_versions_from_before(after_each_batch):
    last = after_each_batch[2]
    assert last["current"] == [
        ('["3"]', at(4), "u", 3, "p", "q", False),
        ('["5"]', at(7), "c", 5, "n", "m", False),
    ]
    # Key 1's three versions (the newest a delete) and key 5's: the redelivery is no version.
    assert [row for row in last["column_c"] if row[0] in ('["1"]', '["5"]')] == [
        ('["1"]', at(1), None),
        ('["1"]', at(3), None),
        ('["1"]', at(8), None),
        ('["5"]', at(7), "new"),
    ]
    assert {
        name: last["types"]["shop__orders__huawei_drs_json__current"][name] for name in ("id", "a", "c", "valid_from")
    } == {
        "id": "int",
        "a": "string",
        "c": "string",
        "valid_from": "timestamp",
    }
    for model in TYPED_MODELS:
        assert last["types"][model]["shipped"] == "timestamp_ntz", model
    assert last["column_shipped"] == [
        ('["3"]', at(4), None),
        ('["5"]', at(7), datetime(2024, 3, 1, 9, 30)),
    ]


def test_every_version_reads_its_columns_newest_type(after_each_batch):
    last = after_each_batch[3]
    # id: int to bigint; a: varchar to int, so the versions from before, whose a is text, read NULL there
    # (their text stays in cdc_history.row).
    for model in TYPED_MODELS:
        assert (last["types"][model]["id"], last["types"][model]["a"]) == ("bigint", "int"), model
    assert last["current"] == [
        ('["3"]', at(4), "u", 3, None, "q", False),
        ('["5"]', at(7), "c", 5, None, "m", False),
        ('["6"]', at(9), "c", 6, 7, "w", False),
    ]


def test_a_repeated_version_and_a_null_flag_fail_the_historys_batch_test(project, after_each_batch):
    table = f"{SCHEMA}.cdc_history"
    (commit,) = project.spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").collect()
    history = project.spark.table(table)
    newest_batch = F.col("cdc_batch_id") == history.agg(F.max("cdc_batch_id")).first()[0]
    newest = history.where(newest_batch & F.col("is_current")).limit(1)
    # Rows of the newest batch no merge writes: an open version again (its scd_id twice, its key with two open
    # versions, which a typed current view would show twice), and a version without its is_current.
    unflagged = newest.withColumn("is_current", F.lit(None).cast("boolean")).withColumn("scd_id", F.lit("x"))
    newest.union(unflagged).write.format("delta").mode("append").saveAsTable(table)
    try:
        outcomes = outcomes_of_tests(project, "cdc_history")
    finally:
        project.spark.sql(f"RESTORE TABLE {table} TO VERSION AS OF {commit.version}")
    assert {name: outcome for name, outcome in outcomes.items() if name.startswith("cdc_versions_hold")} == {
        "cdc_versions_hold_cdc_history_source_format__source_name__source_task__pk__scd_id": ("fail", 3)
    }


def typed_column(project, table: str, column: str) -> tuple[str, int, int]:
    """The Spark type cdc_table_columns gives a column of shop.<table>, the batch that typed it, and the batch
    that last changed how it is typed (when cdc-build creates the table's views again)."""
    (row,) = project.spark.sql(
        f"SELECT spark_type, cdc_batch_id, typing_changed_in_batch FROM {SCHEMA}.cdc_table_columns"
        f" WHERE source_table = '{table}' AND column_name = '{column}'"
    ).collect()
    return row.spark_type, row.cdc_batch_id, row.typing_changed_in_batch


def newest_batch(project) -> int:
    return project.spark.sql(f"SELECT max(batch_id) AS batch_id FROM {SCHEMA}.cdc_batches").first().batch_id


def test_a_changed_type_setting_retypes_every_table_and_a_batch_retypes_only_its_own(project, after_each_batch):
    flags = {"id": ("int", 4), "flag": ("tinyint(1)", -6)}
    sources = ("cdc_observed_column_types", "cdc_vendor_types", "cdc_table_columns")
    project.land(TOPIC, [drs_message(20, "INSERT", data=[{"id": "1", "flag": "1"}], columns=flags, table="flags")])
    project.run(*sources)
    flags_batch = newest_batch(project)
    assert typed_column(project, "flags", "flag") == ("boolean", flags_batch, flags_batch)
    saved = project.dbt_vars
    project.dbt_vars = {**(saved or {}), "cdc_tinyint1_as_boolean": False}
    try:
        # A batch of another table, with MySQL's tinyint(1) no longer read as boolean: shop.flags, which the
        # batch does not touch, is retyped too, and its id, typed as before, keeps its batch of change.
        project.land(TOPIC, [drs_message(21, "INSERT", data=[order("1", "a", "b")], table="other")])
        project.run(*sources)
        assert typed_column(project, "flags", "flag") == ("tinyint", flags_batch + 1, flags_batch + 1)
        assert typed_column(project, "flags", "id") == ("int", flags_batch + 1, flags_batch)
        # The next batch of that table, the setting unchanged, retypes that table's columns alone, which are
        # typed as before.
        project.land(TOPIC, [drs_message(22, "INSERT", data=[order("2", "c", "d")], table="other")])
        project.run(*sources)
        assert typed_column(project, "flags", "flag") == ("tinyint", flags_batch + 1, flags_batch + 1)
        assert typed_column(project, "other", "a") == ("string", flags_batch + 2, flags_batch + 1)
    finally:
        project.dbt_vars = saved


CANAL_TOPIC = "canal_json.chinese_names"
# cdc-scaffold's model name of 商城.订单: pinyin, then the first 6 hex digits of the SHA-256 of each name.
CHINESE_BASE = "shang_cheng_70a0cb__ding_dan_3d5436"
ORDER_COLUMNS = {"编号": ("int(11)", 4), "金额": ("decimal(10,2)", 3)}
WITH_NOTE = {**ORDER_COLUMNS, "备注": ("varchar(20)", 12)}


def canal_message(
    batch_id: int,
    seq: int,
    operation: str,
    data=None,
    old=None,
    columns: dict = ORDER_COLUMNS,
    sql="",
    table: tuple[str, str, str] = ("商城", "订单", "编号"),
) -> bytes:
    """A Canal flat message of a table (database, table, key column; 商城.订单 by default) executed at
    T0 + seq seconds; Canal gives every message of one batch it fetched from the binlog the batch's id."""
    ddl = operation == "ALTER"
    database, table_name, key = table
    message = {
        "data": data,
        "database": database,
        "es": int(at(seq).timestamp() * 1000),
        "id": batch_id,
        "isDdl": ddl,
        "mysqlType": None if ddl else {name: vendor for name, (vendor, _) in columns.items()},
        "old": old,
        "pkNames": None if ddl else [key],
        "sql": sql,
        "sqlType": None if ddl else {name: jdbc for name, (_, jdbc) in columns.items()},
        "table": table_name,
        "ts": int(at(seq).timestamp() * 1000) + 7,
        "type": operation,
    }
    return json.dumps(message, ensure_ascii=False).encode()


CHINESE_BATCHES = [
    [
        canal_message(1, 1, "INSERT", data=[{"编号": "1", "金额": "12.50"}, {"编号": "2", "金额": "3.00"}]),
        canal_message(1, 2, "UPDATE", data=[{"编号": "1", "金额": "13.75"}], old=[{"金额": "12.50"}]),
    ],
    [
        canal_message(2, 3, "ALTER", sql="ALTER TABLE `订单` ADD COLUMN `备注` varchar(20)"),
        canal_message(2, 4, "INSERT", data=[{"编号": "3", "金额": "1.00", "备注": "加急"}], columns=WITH_NOTE),
        canal_message(3, 5, "DELETE", data=[{"编号": "2", "金额": "3.00", "备注": None}], columns=WITH_NOTE),
    ],
]


ODD_TOPIC = "canal_json.odd_names"
ODD_TABLE = ("shop", "odd", "id")
ODD_BASE = "shop__odd"
# Legal quoted identifiers in MySQL, PostgreSQL, Oracle and SQL Server; Delta refuses ' ,;{}()=' in a column
# name without column mapping, and Delta's MERGE cannot expand `*` over a name holding a backtick.
ODD_COLUMNS = {
    "id": ("int(11)", 4),
    "列 名": ("varchar(20)", 12),
    "v -- c": ("int(11)", 4),
    "a,b;c{d}(e)=f": ("varchar(10)", 12),
    'it\'s "q"': ("varchar(10)", 12),
    "x`y": ("varchar(10)", 12),
    "p.q": ("varchar(10)", 12),
    "{{ var('x') }}": ("varchar(10)", 12),
}
# After the DDL: `v -- c` widened to bigint, four columns added, one with a backtick, two starting with a #
# (which dbt-spark's parsing of `describe` takes for a comment line).
ODD_WIDER = {
    **ODD_COLUMNS,
    "v -- c": ("bigint(20)", -5),
    "new col;": ("varchar(10)", 12),
    "add`ed": ("varchar(10)", 12),
    "#id": ("varchar(10)", 12),
    "# note": ("varchar(10)", 12),
}


def odd_row(key: str, *values: str | None) -> dict:
    """A row of shop.odd: the key, then a value per column after it, in ODD_WIDER's order (None past the end)."""
    names = list(ODD_WIDER)[1:]
    return {"id": key, **dict(zip(names, list(values) + [None] * (len(names) - len(values)), strict=True))}


def odd_message(batch_id: int, seq: int, operation: str, data=None, old=None, columns=ODD_COLUMNS, sql=""):
    return canal_message(batch_id, seq, operation, data, old, columns, sql, table=ODD_TABLE)


ROW_1 = odd_row("1", "一", "10", "x1", "q1", "b1", "d1", "j1")
ROW_1_UPDATED = odd_row("1", "一", "10", "x1", "q1", "b1-2", "d1", "j1")
ROW_2 = odd_row("2", "二", "20", "x2", "q2", "b2", "d2", "j2")
ROW_2_UPDATED = odd_row("2", "二 改", "20", "x2", "q2", "b2", "d2", "j2", None, "e2")
ROW_3 = odd_row("3", "三", "9000000000", "x3", "q3", "b3", "d3", "j3", "n3", "e3", "h3", "n#3")
ODD_BATCHES = [
    [
        odd_message(11, 11, "INSERT", data=[ROW_1, ROW_2]),
        odd_message(11, 12, "UPDATE", data=[ROW_1_UPDATED], old=[{"x`y": "b1"}]),
    ],
    [
        odd_message(
            12,
            13,
            "ALTER",
            sql="ALTER TABLE `odd` MODIFY `v -- c` bigint, ADD `new col;` varchar(10), ADD `add``ed` varchar(10),"
            " ADD `#id` varchar(10), ADD `# note` varchar(10)",
        ),
        odd_message(12, 14, "INSERT", data=[ROW_3], columns=ODD_WIDER),
        odd_message(12, 15, "UPDATE", data=[ROW_2_UPDATED], old=[{"列 名": "二", "add`ed": None}], columns=ODD_WIDER),
        odd_message(13, 16, "DELETE", data=[{**ROW_1_UPDATED, "new col;": None, "add`ed": None}], columns=ODD_WIDER),
    ],
]


@pytest.fixture(scope="module")
def canal_tables(project, tmp_path_factory) -> dict:
    """商城.订单 and shop.odd scaffolded after their first batch, built after each, refreshed after the second."""
    import io
    from contextlib import redirect_stdout

    copy = project_without_typed_tables(tmp_path_factory.mktemp("scaffold_project") / "project")
    project.project_dir = copy

    def scaffold_output(*arguments: str) -> str:
        with redirect_stdout(io.StringIO()) as output:
            assert scaffold(["--project-dir", str(copy), "--source-format", "canal_json", *arguments]) == 0
        return output.getvalue()

    try:
        project.reset("canal_json")
        project.type_mappings()
        typed = tuple(f"{base}__{kind}" for base in (CHINESE_BASE, ODD_BASE) for kind in ("history", "current"))
        sources = ("cdc_observed_column_types", "cdc_vendor_types", "cdc_table_columns")
        project.land(CANAL_TOPIC, CHINESE_BATCHES[0])
        project.land(ODD_TOPIC, ODD_BATCHES[0])
        project.run(*sources)
        scaffolded = scaffold_output()
        project.run(*sources, *typed)
        first = project.spark.table(f"{SCHEMA}.{CHINESE_BASE}__current").orderBy("编号").collect()
        project.land(CANAL_TOPIC, CHINESE_BATCHES[1])
        project.land(ODD_TOPIC, ODD_BATCHES[1])
        project.run(*sources, *typed)
        refreshed = scaffold_output("--refresh")
        # PySpark parses a column name given as text: quoted, with backticks doubled.
        odd_columns = tuple(f"`{name.replace('`', '``')}`" for name in ODD_WIDER)
        as_of = project.dbt(
            "show",
            "--inline",
            "select id, `x``y`, `v -- c` from {{ cdc_as_of(ref('shop__odd__history'), \"timestamp'"
            + str(at(12))
            + "'\") }} as odd order by id",
        )
        (shown,) = as_of.result.results
        # The columns of the odd table's YAML as dbt reads them (the scaffold writes a name holding braces
        # as a Jinja string, so it renders to the name).
        manifest = project.dbt("parse").result
        odd_yaml_columns = list(manifest.nodes[f"model.cdc_lakehouse.{ODD_BASE}__history"].columns)
        tables = {
            base: yaml.safe_load((copy / "models" / "tables" / f"_{base}__models.yml").read_text())
            for base in (CHINESE_BASE, ODD_BASE)
        }
        yield {
            "scaffolded": scaffolded,
            "refreshed": refreshed,
            "yaml": tables,
            "first": [(row["编号"], row["金额"]) for row in first],
            "current": project.spark.table(f"{SCHEMA}.{CHINESE_BASE}__current")
            .orderBy("编号")
            .select("编号", "金额", "备注", "op")
            .collect(),
            "history": project.spark.table(f"{SCHEMA}.{CHINESE_BASE}__history")
            .orderBy("编号", "valid_from")
            .select("编号", "金额", "备注", "is_current", "is_deleted")
            .collect(),
            "types": dict(project.spark.table(f"{SCHEMA}.{CHINESE_BASE}__history").dtypes),
            "odd_current": [
                row.asDict()
                for row in project.spark.table(f"{SCHEMA}.{ODD_BASE}__current")
                .orderBy("id")
                .select(*odd_columns)
                .collect()
            ],
            "odd_history": [
                tuple(row)
                for row in project.spark.table(f"{SCHEMA}.{ODD_BASE}__history")
                .orderBy("id", "valid_from")
                .select("id", "op", "`x``y`", "`new col;`", "is_current", "is_deleted")
                .collect()
            ],
            "odd_types": {
                model: dict(project.spark.table(f"{SCHEMA}.{ODD_BASE}__{model}").dtypes)
                for model in ("history", "current")
            },
            "odd_as_of": [tuple(row) for row in shown.agate_table.rows],
            "odd_yaml_columns": odd_yaml_columns,
        }
    finally:
        project.project_dir = PROJECT_DIR


def test_a_table_named_in_chinese_is_scaffolded_built_and_evolved(canal_tables):
    table = canal_tables
    assert f"商城.订单 (canal_json) -> {CHINESE_BASE}__history, {CHINESE_BASE}__current" in table["scaffolded"]
    assert f"models/tables/_{CHINESE_BASE}__models.yml: refreshed" in table["refreshed"]
    assert table["first"] == [(1, Decimal("13.75")), (2, Decimal("3.00"))]
    # The column added by ALTER TABLE: typed, NULL in the versions from before, documented by --refresh.
    assert [tuple(row) for row in table["current"]] == [
        (1, Decimal("13.75"), None, "u"),
        (3, Decimal("1.00"), "加急", "c"),
    ]
    assert [tuple(row) for row in table["history"]] == [
        (1, Decimal("12.50"), None, False, False),
        (1, Decimal("13.75"), None, True, False),
        (2, Decimal("3.00"), None, False, False),
        (2, Decimal("3.00"), None, True, True),
        (3, Decimal("1.00"), "加急", True, False),
    ]
    assert {name: table["types"][name] for name in ("编号", "金额", "备注")} == {
        "编号": "int",
        "金额": "decimal(10,2)",
        "备注": "string",
    }
    (history_model, _) = table["yaml"][CHINESE_BASE]["models"]
    assert [column["name"] for column in history_model["columns"]][-3:] == ["编号", "金额", "备注"]


def test_columns_keep_any_name_the_source_allows_through_additions_and_widening(canal_tables):
    table = canal_tables
    assert f"shop.odd (canal_json) -> {ODD_BASE}__history, {ODD_BASE}__current" in table["scaffolded"]
    # Key 1 was deleted; key 2 updated after the DDL (its added columns null, then e2); key 3 inserted with them.
    assert table["odd_current"] == [
        {**ROW_2_UPDATED, "id": 2, "v -- c": 20},
        {**ROW_3, "id": 3, "v -- c": 9000000000},
    ]
    assert table["odd_history"] == [
        (1, "c", "b1", None, False, False),
        (1, "u", "b1-2", None, False, False),
        (1, "d", "b1-2", None, True, True),
        (2, "c", "b2", None, False, False),
        (2, "u", "b2", None, True, False),
        (3, "c", "b3", "n3", True, False),
    ]
    for model in ("history", "current"):
        types = table["odd_types"][model]
        assert {name: types[name] for name in ODD_WIDER} == {
            "id": "int",
            "列 名": "string",
            "v -- c": "bigint",  # widened: every version reads bigint
            "a,b;c{d}(e)=f": "string",
            'it\'s "q"': "string",
            "x`y": "string",
            "p.q": "string",
            "{{ var('x') }}": "string",
            "new col;": "string",
            "add`ed": "string",
            "#id": "string",
            "# note": "string",
        }, model
    # The history as it was after the first batch's update (cdc_as_of).
    assert table["odd_as_of"] == [(1, "b1-2", 10), (2, "b2", 20)]
    assert set(ODD_WIDER) <= set(table["odd_yaml_columns"])


if __name__ == "__main__":
    pytest.main([__file__, "-q", "-m", "slow"])
