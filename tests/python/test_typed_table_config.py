"""The deployment's typed-table settings (vars cdc_typed_tables): how they are read and checked, which tables
they select and route, the names and files cdc-scaffold gives routes. No Spark."""

import pytest

from cdc_lakehouse.build_plan import ChangedTable, matches
from cdc_lakehouse.scaffold import chosen_tables
from cdc_lakehouse.typed_model_files import route_files
from cdc_lakehouse.typed_model_names import ROUTE_META, TYPED_TABLE_TAG, SourceTable, model_bases
from cdc_lakehouse.typed_table_config import Match, TypedTableConfigError, parse_config

SHARDS = {
    "name": "orders",
    "match": {"source_format": "canal_json", "source_database": r"order_db_\d+", "source_table": r"orders_\d+"},
}


def test_a_route_matches_whole_names():
    route = parse_config({"routes": [SHARDS]}).route("orders")
    assert route.match.matches(source_format="canal_json", source_database="order_db_07", source_table="orders_31")
    assert not route.match.matches(source_format="canal_json", source_database="order_db_07", source_table="orders_x")
    assert not route.match.matches(source_format="canal_json", source_database="xorder_db_1", source_table="orders_1")
    assert not route.match.matches(source_format="canal_json", source_database=None, source_table="orders_1")
    assert not route.match.matches(source_format="tencent_dts_protobuf", source_database="order_db_1")
    assert route.key == "per_shard"


def test_a_name_left_out_of_a_match_matches_any():
    assert Match((("source_table", "orders"),)).matches(source_format="canal_json", source_database=None)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"routes": [{**SHARDS, "key": "shard"}]}, "routes[0].key: per_shard or global, not 'shard'"),
        ({"routes": [{**SHARDS, "name": "Orders"}]}, "routes[0].name: lower-case letters, digits and _"),
        ({"routes": [SHARDS, SHARDS]}, "routes: orders twice"),
        ({"routes": [{**SHARDS, "match": {"database": "x"}}]}, "routes[0].match names database"),
        ({"routes": [{**SHARDS, "match": {"source_table": "orders_("}}]}, "is not a regular expression"),
        ({"primary_keys": [{"match": {"source_table": "t"}}]}, "primary_keys[0]: a match and a primary_key"),
        ({"primary_keys": [{"match": {"source_table": "t"}, "primary_key": "id"}]}, "a list of column names"),
        ({"include": "shop.*"}, "include: a list of regular expressions"),
        ({"name_prefix": "ODS-"}, "name_prefix: lower-case letters, digits and _"),
        ({"prefix": "ods_"}, "unknown settings prefix"),
    ],
)
def test_settings_that_cannot_be_used_say_which(settings, message):
    with pytest.raises(TypedTableConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse_config(settings)


def test_scaffold_chooses_included_tables_no_route_takes():
    config = parse_config(
        {"include": [r"order_db_\d+\..*", r"shop\..*"], "exclude": [r"shop\.tmp_.*"], "routes": [SHARDS]}
    )
    tables = [
        SourceTable("order_db_1", "orders_03", source_format="canal_json"),
        SourceTable("order_db_1", "refunds", source_format="canal_json"),
        SourceTable("shop", "items", source_format="canal_json"),
        SourceTable("shop", "tmp_load", source_format="canal_json"),
        SourceTable("crm", "people", source_format="canal_json"),
        SourceTable("order_db_1", "orders_03", source_format="tencent_dts_protobuf"),
    ]
    assert chosen_tables(tables, config) == [tables[1], tables[2], tables[5]]


def test_new_names_take_the_prefix_and_suffix_and_keep_clear_of_routes():
    config = parse_config({"name_prefix": "ods_", "name_suffix": "_cdc"})
    tables = [SourceTable("shop", "orders"), SourceTable("shop", "items")]
    scaffolded = {'"shop", "items"': "shop__items"}
    assert model_bases(tables, scaffolded, config=config, taken=["ods_shop__orders_cdc"]) == [
        "ods_shop__orders_cdc__2",
        "shop__items",
    ]


def test_a_routes_files_name_only_the_route():
    route = parse_config({"routes": [{**SHARDS, "key": "global"}]}).route("orders")
    files = route_files(route, "ods_orders")
    assert sorted(files) == ["_ods_orders__models.yml", "ods_orders__current.sql", "ods_orders__history.sql"]
    assert "cdc_route_filter('versions', 'orders')" in files["ods_orders__history.sql"]
    assert "cdc_route_typed_columns('versions', 'orders')" in files["ods_orders__history.sql"]
    assert "order_db" not in files["ods_orders__history.sql"]
    assert "{{ ref('ods_orders__history') }}" in files["ods_orders__current.sql"]
    assert "cdc_route_current_rows('typed_versions', 'orders')" in files["ods_orders__current.sql"]
    assert f"meta:\n        {ROUTE_META}: orders" in files["_ods_orders__models.yml"]
    assert f"- {TYPED_TABLE_TAG}" in files["_ods_orders__models.yml"]


def test_cdc_build_recreates_a_route_when_any_of_its_tables_changed_columns():
    route = parse_config({"routes": [SHARDS]}).route("orders")
    assert matches(route, ChangedTable("canal_json", "order_db_2", None, "orders_15", 7))
    assert not matches(route, ChangedTable("canal_json", "order_db_2", None, "refunds", 7))


def test_a_table_the_pipeline_viewed_keeps_its_views_name_in_its_models():
    items, orders = SourceTable("shop", "items", source_format="canal_json"), SourceTable("shop", "orders")
    viewed = {items: "shop__items__canal_json", SourceTable("shop", "other", source_format="canal_json"): "shop__x"}
    assert model_bases([items, orders], viewed=viewed) == ["shop__items__canal_json", "shop__orders"]
