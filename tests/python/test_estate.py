"""An estate, not a table: shards typed as one (routes), the tables a deployment chooses and how it names them, a shard
that appears mid-stream, and a key declared where the source has none (README, "Typed tables and querying"). In a
copy of the project whose dbt_project.yml declares (vars cdc_typed_tables):

- route `orders`: Canal's order_db_0..3.orders_00..15, a key per shard; route `orders_by_id`, the same shards with
  one current row per key across them; route `payments`: Tencent DTS's pay_db_0..3.payments_00..15, one current row
  per key;
- logs.page_views (Canal), a table without a primary key, given the key view_id; tmp.* left out; every model name
  prefixed ods_.

Four batches, each followed by a scheduled run (cdc-build) but the last, a plain `dbt build`. The first run creates
the views of the routes and of the chosen tables without a model file; cdc-scaffold then writes their models, and a
table that appears later (shop.items) is typed by the run that lands it. Every shard but the 16th of each database
inserts key 1 (the same key value in every shard) and a key of its own; `ALTER TABLE ... ADD COLUMN` reaches
database 0's shards in batch 2 and the others' in batch 3; the 16th shard of each database appears in batch 2 and
joins its route without a command. The expected rows are written by hand from the story, not read from the code.
"""

import itertools
import json
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from helpers import in_process_schema, project_without_typed_tables

from vendor_writers import INSERT, UPDATE, Change, Table
from vendor_writers import canal_json as canal_writer
from vendor_writers import tencent_dts_protobuf as dts_writer

pytestmark = pytest.mark.slow

SCHEMA = "estate"
T0 = datetime(2026, 3, 1, 8, 0, 0)
DATABASES = range(4)
FIRST_SHARDS = range(15)  # orders_00..14 from the first batch; orders_15 appears in the second
CANAL_TOPIC, DTS_TOPIC = "canal_json.estate", "tencent_dts_protobuf.estate"
TYPED_TABLES = {
    "name_prefix": "ods_",
    "exclude": [r"tmp\..*"],
    "routes": [
        {
            "name": "orders",
            "match": {"source_format": "canal_json", "source_database": r"order_db_\d+", "source_table": r"orders_\d+"},
        },
        {
            "name": "orders_by_id",
            "match": {"source_format": "canal_json", "source_database": r"order_db_\d+", "source_table": r"orders_\d+"},
            "key": "global",
        },
        {
            "name": "payments",
            "match": {"source_format": "tencent_dts_protobuf", "source_database": r"pay_db_\d+"},
            "key": "global",
        },
    ],
    "primary_keys": [{"match": {"source_database": "logs", "source_table": "page_views"}, "primary_key": ["view_id"]}],
}


def ms(seconds: int) -> int:
    return int((T0 + timedelta(seconds=seconds)).timestamp() * 1000)


def order_shard(database: int, shard: int, with_note: bool = False) -> Table:
    types = {"id": "bigint(20)", "status": "varchar(16)", **({"note": "varchar(32)"} if with_note else {})}
    return Table(f"order_db_{database}", f"orders_{shard:02d}", types, {"id": -5, "status": 12, "note": 12})


def payment_shard(database: int, shard: int, with_currency: bool = False) -> Table:
    types = {"id": "bigint(20)", "amount": "decimal(10,2)", **({"currency": "varchar(3)"} if with_currency else {})}
    return Table(f"pay_db_{database}", f"payments_{shard:02d}", types)


def own_key(database: int, shard: int) -> int:
    """The key only this shard has."""
    return 1000 + 16 * database + shard


PAGE_VIEWS = Table("logs", "page_views", {"view_id": "bigint(20)", "path": "varchar(64)"}, keys=())
PAGE_VIEWS_WITH_REFERRER = Table(
    "logs", "page_views", {"view_id": "bigint(20)", "path": "varchar(64)", "referrer": "varchar(64)"}, keys=()
)
SCRATCH = Table("tmp", "scratch", {"id": "bigint(20)"})
ITEMS = Table("shop", "items", {"id": "bigint(20)", "name": "varchar(32)"}, {"id": -5, "name": 12})


# ------------------------------------------------------------------------------------ the vendors' messages


def canal_batches() -> list[list[bytes]]:
    ids = itertools.count(1)

    def message(*changes: Change) -> bytes:
        return json.dumps(canal_writer.flat_message(next(ids), list(changes))).encode()

    def add_note(database: int, shard: int, at: int) -> bytes:
        sql = f"ALTER TABLE `orders_{shard:02d}` ADD COLUMN `note` varchar(32)"
        return json.dumps(canal_writer.ddl_message(next(ids), order_shard(database, shard), sql, ms(at))).encode()

    def inserts(database: int, shard: int, at: int) -> bytes:
        table = order_shard(database, shard)
        rows = [{"id": "1", "status": "new"}, {"id": str(own_key(database, shard)), "status": "new"}]
        return message(*(Change(table, INSERT, None, row, ms(at)) for row in rows))

    first = [inserts(d, s, 16 * d + s) for d in DATABASES for s in FIRST_SHARDS]
    first += [
        message(
            *(
                Change(PAGE_VIEWS, INSERT, None, {"view_id": v, "path": p}, ms(70))
                for v, p in (("1", "/a"), ("2", "/b"))
            )
        ),
        message(Change(SCRATCH, INSERT, None, {"id": "1"}, ms(70))),
    ]
    second = [add_note(0, s, 100 + s) for s in FIRST_SHARDS]
    for d, s in itertools.product(DATABASES, FIRST_SHARDS):
        table, at = order_shard(d, s, with_note=d == 0), ms(200 + 16 * d + s)
        paid = {"id": "1", "status": "paid", **({"note": f"n{s}"} if d == 0 else {})}
        before = {"id": "1", "status": "new", **({"note": None} if d == 0 else {})}
        second.append(message(Change(table, UPDATE, before, paid, at)))
    second += [inserts(d, 15, 300 + d) for d in DATABASES]
    second.append(message(Change(ITEMS, INSERT, None, {"id": "7", "name": "tea"}, ms(305))))
    second.append(
        message(
            Change(
                PAGE_VIEWS_WITH_REFERRER,
                UPDATE,
                {"view_id": "1", "path": "/a", "referrer": None},
                {"view_id": "1", "path": "/a2", "referrer": "/x"},
                ms(310),
            )
        )
    )
    third = [add_note(d, s, 400 + 16 * d + s) for d in DATABASES[1:] for s in FIRST_SHARDS]
    for d, s in itertools.product(DATABASES[1:], FIRST_SHARDS):
        key = str(own_key(d, s))
        shipped = {"id": key, "status": "shipped", "note": "late"}
        before = {"id": key, "status": "new", "note": None}
        third.append(message(Change(order_shard(d, s, with_note=True), UPDATE, before, shipped, ms(500 + 16 * d + s))))
    return [first, second, third, []]


def dts_batches() -> list[list[bytes]]:
    writer = dts_writer.DtsWriter("pay_db_0", seq_id=7000)

    def transaction(*changes: Change) -> bytes:
        writer.database = changes[0].table.database
        begin = writer.begin()
        return dts_writer.envelope(dts_writer.entries([begin, writer.dml(list(changes)), writer.commit(begin)]))

    def add_currency(database: int, shard: int, at: int) -> bytes:
        writer.database, writer.clock_s = f"pay_db_{database}", ms(at) // 1000
        sql = f"ALTER TABLE `payments_{shard:02d}` ADD COLUMN `currency` varchar(3)"
        return dts_writer.envelope(dts_writer.entries([writer.ddl(f"payments_{shard:02d}", sql)]))

    def inserts(database: int, shard: int, at: int) -> bytes:
        table = payment_shard(database, shard)
        rows = [
            {"id": "1", "amount": f"{database}.{shard:02d}"},
            {"id": str(own_key(database, shard)), "amount": "5.00"},
        ]
        return transaction(*(Change(table, INSERT, None, row, ms(at)) for row in rows))

    first = [inserts(d, s, 16 * d + s) for d in DATABASES for s in FIRST_SHARDS]
    second = [add_currency(0, s, 100 + s) for s in FIRST_SHARDS]
    second += [
        transaction(
            Change(
                payment_shard(0, s, with_currency=True),
                UPDATE,
                {"id": "1", "amount": f"0.{s:02d}", "currency": None},
                {"id": "1", "amount": "9.99", "currency": "CNY"},
                ms(200 + s),
            )
        )
        for s in FIRST_SHARDS
    ]
    second += [inserts(d, 15, 300 + d) for d in DATABASES]
    third = [add_currency(d, s, 400 + 16 * d + s) for d in DATABASES[1:] for s in FIRST_SHARDS]
    third += [
        transaction(
            Change(
                payment_shard(d, s, with_currency=True),
                UPDATE,
                {"id": str(own_key(d, s)), "amount": "5.00", "currency": None},
                {"id": str(own_key(d, s)), "amount": "6.00", "currency": "USD"},
                ms(500 + 16 * d + s),
            )
        )
        for d, s in itertools.product(DATABASES[1:], FIRST_SHARDS)
    ]
    return [first, second, third, []]


# ------------------------------------------------------------------------------------ the deployment


class Estate:
    def __init__(self, spark, tmp_path_factory) -> None:
        import yaml

        from cdc_lakehouse.dbt_project import DbtProject

        self.spark = spark
        self.root = project_without_typed_tables(tmp_path_factory.mktemp("estate") / "project")
        project_file = self.root / "dbt_project.yml"
        project = yaml.safe_load(project_file.read_text())
        project["vars"]["cdc_typed_tables"] = TYPED_TABLES
        project_file.write_text(yaml.safe_dump(project, sort_keys=False))
        self.project = DbtProject(
            project_dir=self.root, dbt_vars={"cdc_enabled_formats": ["canal_json", "tencent_dts_protobuf"]}
        )
        self.streams = {
            CANAL_TOPIC: ("canal_json", canal_batches()),
            DTS_TOPIC: ("tencent_dts_protobuf", dts_batches()),
        }
        self.landed = dict.fromkeys(self.streams, 0)

    def land(self, number: int) -> None:
        from cdc_lakehouse.landing import TopicMessages, land_topics

        batches = []
        for topic, (source_format, stream) in self.streams.items():
            batches.append(TopicMessages(source_format, topic, 0, self.landed[topic], stream[number]))
            self.landed[topic] += len(stream[number])
        land_topics(self.spark, [batch for batch in batches if batch.messages])

    def scheduled_run(self) -> None:
        from cdc_lakehouse.scheduled_build import scheduled_build

        outcome = scheduled_build(self.project, self.spark)
        assert outcome.succeeded, outcome.failures

    def scaffold(self) -> None:
        from cdc_lakehouse.scaffold import main as scaffold

        assert scaffold(["--project-dir", str(self.root)]) == 0
        self.project = type(self.project)(project_dir=self.root, dbt_vars=self.project.dbt_vars)

    def views(self) -> list[str]:
        """The typed views: every view of the schema with the settings' prefix."""
        return sorted(row.viewName for row in self.spark.sql(f"show views in {SCHEMA} like 'ods_*'").collect())

    def rows(self, relation: str, columns: str) -> list[tuple]:
        return sorted(map(tuple, self.spark.sql(f"select {columns} from {SCHEMA}.{relation}").collect()))


@pytest.fixture(scope="module")
def estate(spark, tmp_path_factory):
    with in_process_schema(spark, SCHEMA), pytest.MonkeyPatch.context() as env:
        env.setenv("CDC_WAREHOUSE", str(tmp_path_factory.mktemp("estate_warehouse")))
        estate = Estate(spark, tmp_path_factory)
        estate.land(0)
        estate.scheduled_run()
        estate.views_before_scaffold = estate.views()
        estate.orders_before_scaffold = estate.rows("ods_orders__current", "source_database, source_table, id")
        estate.scaffold()
        estate.scheduled_run()
        estate.land(1)
        estate.scheduled_run()
        estate.items_when_they_appeared = estate.rows("ods_shop__items__current", "id, name")
        estate.land(2)
        estate.project.run_checked(["build"])
        yield estate
        spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


def test_the_first_run_typed_the_routes_and_the_chosen_tables_without_a_model(estate):
    assert estate.views_before_scaffold == [
        "ods_logs__page_views__current",
        "ods_logs__page_views__history",
        "ods_orders__current",
        "ods_orders__history",
        "ods_orders_by_id__current",
        "ods_orders_by_id__history",
        "ods_payments__current",
        "ods_payments__history",
    ]
    assert len(estate.orders_before_scaffold) == 4 * 15 * 2
    assert ("order_db_2", "orders_07", own_key(2, 7)) in estate.orders_before_scaffold


def test_a_table_that_appears_is_typed_by_the_run_that_lands_it(estate):
    assert estate.items_when_they_appeared == [(7, "tea")]
    assert "ods_shop__items__current" in estate.views()
    assert not list((estate.root / "models" / "tables").glob("*items*"))


def test_views_are_created_for_what_has_no_model_and_only_then(estate):
    # The routes' tables and logs.page_views were retyped after cdc-scaffold wrote their models: no new views.
    assert estate.rows("cdc_typed_views", "view_name") == [
        ("ods_logs__page_views",),
        ("ods_orders",),
        ("ods_orders_by_id",),
        ("ods_payments",),
        ("ods_shop__items",),
    ]


def test_cdc_scaffold_wrote_the_routes_and_the_chosen_tables_with_their_prefix(estate):
    written = sorted(path.name for path in (estate.root / "models" / "tables").glob("*.sql"))
    assert written == [
        "ods_logs__page_views__current.sql",
        "ods_logs__page_views__history.sql",
        "ods_orders__current.sql",
        "ods_orders__history.sql",
        "ods_orders_by_id__current.sql",
        "ods_orders_by_id__history.sql",
        "ods_payments__current.sql",
        "ods_payments__history.sql",
    ]


def test_a_route_holds_every_shard_each_key_per_shard(estate):
    expected = []
    for d, s in itertools.product(DATABASES, range(16)):
        db, table = f"order_db_{d}", f"orders_{s:02d}"
        if s == 15:  # appeared in batch 2, inserted only
            expected += [(db, table, 1, "new", None), (db, table, own_key(d, s), "new", None)]
        elif d == 0:  # the column came in batch 2, before key 1 was paid
            expected += [(db, table, 1, "paid", f"n{s}"), (db, table, own_key(d, s), "new", None)]
        else:  # key 1 paid before the column came; the shard's own key shipped after
            expected += [(db, table, 1, "paid", None), (db, table, own_key(d, s), "shipped", "late")]
    rows = estate.rows("ods_orders__current", "source_database, source_table, id, status, note")
    assert rows == sorted(expected)
    assert len(rows) == 128


def test_the_same_key_in_two_shards_is_two_rows_per_shard_and_one_across_them(estate):
    assert estate.rows("ods_orders__current", "id").count((1,)) == 64
    # Key 1 across the shards: the newest version, order_db_3.orders_15's insert at T0 + 303 s.
    by_id = estate.rows("ods_orders_by_id__current", "id, source_database, source_table, status")
    assert [row for row in by_id if row[0] == 1] == [(1, "order_db_3", "orders_15", "new")]
    assert len(by_id) == 1 + 64


def test_a_global_route_of_dts_shards(estate):
    rows = estate.rows("ods_payments__current", "id, source_database, source_table, amount, currency")
    # Key 1: database 0's shards paid 9.99 CNY at T0 + 200..214 s; the 16th shards inserted it at 300..303 s.
    assert [row for row in rows if row[0] == 1] == [(1, "pay_db_3", "payments_15", Decimal("3.15"), None)]
    assert (own_key(0, 4), "pay_db_0", "payments_04", Decimal("5.00"), None) in rows
    assert (own_key(2, 4), "pay_db_2", "payments_04", Decimal("6.00"), "USD") in rows
    assert (own_key(2, 15), "pay_db_2", "payments_15", Decimal("5.00"), None) in rows
    assert len(rows) == 1 + 64


def test_a_route_history_keeps_each_shards_versions(estate):
    rows = estate.rows(
        "ods_payments__history",
        "source_database, source_table, id, amount, currency, is_current",
    )
    assert [row for row in rows if row[:3] == ("pay_db_0", "payments_03", 1)] == [
        ("pay_db_0", "payments_03", 1, Decimal("0.03"), None, False),
        ("pay_db_0", "payments_03", 1, Decimal("9.99"), "CNY", True),
    ]
    assert len(rows) == 4 * 16 * 2 + 15 + 45


def test_a_declared_key_makes_a_keyless_table_a_table_of_keys(estate):
    assert estate.rows("ods_logs__page_views__current", "view_id, path, referrer") == [
        (1, "/a2", "/x"),
        (2, "/b", None),
    ]
    history = estate.rows("ods_logs__page_views__history", "pk, path, is_current")
    assert history == [('["1"]', "/a", False), ('["1"]', "/a2", True), ('["2"]', "/b", True)]


def test_an_excluded_table_has_no_typed_view_and_keeps_its_history(estate):
    assert not list((estate.root / "models" / "tables").glob("*scratch*"))
    assert not [view for view in estate.views() if "scratch" in view]
    assert estate.rows("cdc_current", "source_table").count(("scratch",)) == 1
