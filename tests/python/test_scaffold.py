"""cdc-scaffold without Spark: model names of tables named in any script, names that reach YAML and SQL
only as literals, files planned as new, unchanged, kept, overwritten or refreshed. Expected names are
written by hand (pinyin of 订单 is ding dan)."""

import re

import jinja2
import yaml

from cdc_lakehouse.scaffold import plan_files, scaffolded_tables, write_files
from cdc_lakehouse.typed_model_files import refreshed_yaml, scaffold_files, schema_yaml
from cdc_lakehouse.typed_model_names import SourceColumn, SourceTable, model_bases, name_part, table_arguments


def test_names_in_any_script_become_readable_ascii_model_names_that_never_collide():
    assert name_part("orders") == "orders"
    assert name_part("Order-Items `x`") == "order_items_x"
    assert name_part("café") == "cafe"
    # Transliterated, then a hash of the name: 订单 and 定单 both read ding dan.
    assert re.fullmatch(r"ding_dan_[0-9a-f]{6}", name_part("订单"))
    assert re.fullmatch(r"ding_dan_[0-9a-f]{6}", name_part("定单"))
    assert name_part("订单") != name_part("定单")
    assert re.fullmatch(r"ding_dan_ming_xi_[0-9a-f]{6}", name_part("订单明细"))
    assert re.fullmatch(r"zakazy_[0-9a-f]{6}", name_part("заказы"))
    assert name_part("订单") == name_part("订单")


def test_colliding_names_are_resolved_the_same_whatever_order_the_tables_come_in():
    tables = [
        SourceTable("shop", "orders", source_format="canal_json"),
        SourceTable("shop", "Orders", source_format="canal_json"),
        SourceTable("shop", "orders", source_format="huawei_drs_json"),
        SourceTable(None, "orders", source_format="canal_json"),
    ]
    # In name order (Orders before orders), a colliding name takes the source format.
    expected = ["shop__orders__canal_json", "shop__orders", "shop__orders__huawei_drs_json", "no_database__orders"]
    assert model_bases(tables) == expected
    assert model_bases(tables[::-1]) == expected[::-1]


def test_a_table_of_several_streams_names_its_format_even_when_scaffolded_alone():
    drs = SourceTable("shop", "orders", source_format="huawei_drs_json")
    assert model_bases([drs]) == ["shop__orders"]
    # cdc_table_columns has seen shop.orders in another format too.
    assert model_bases([drs], {}, {("shop", None, "orders")}) == ["shop__orders__huawei_drs_json"]
    assert model_bases([SourceTable("shop", "orders")], {}, {("shop", None, "orders")}) == ["shop__orders"]


def test_a_table_scaffolded_before_keeps_its_models_whatever_tables_come_later(tmp_path):
    drs = SourceTable("shop", "orders", source_format="huawei_drs_json")
    write_files(plan_files([drs], ["shop__orders"], {}, tmp_path))
    assert scaffolded_tables(tmp_path) == {table_arguments(drs): "shop__orders"}
    # canal_json sorts first and would take shop__orders, which the earlier table holds.
    canal = SourceTable("shop", "orders", source_format="canal_json")
    assert model_bases([canal, drs], scaffolded_tables(tmp_path)) == ["shop__orders__canal_json", "shop__orders"]


def test_a_table_without_a_database_is_matched_as_null():
    history = scaffold_files(SourceTable(None, "订单", source_format="canal_json"))
    (sql,) = [content for name, content in history.items() if name.endswith("__history.sql")]
    assert """cdc_source_table_filter('versions', none, "订单", source_format="canal_json")""" in sql
    (models,) = [yaml.safe_load(content) for name, content in history.items() if name.endswith(".yml")]
    assert models["models"][0]["config"]["meta"]["cdc_source_table"]["source_database"] is None


# The columns the YAML documents before the typed ones.
METADATA_YAML_COLUMNS = [
    "pk",
    "valid_from",
    "valid_to",
    "is_current",
    "is_deleted",
    "op",
    "source_seq",
    "scd_id",
    "chain_id",
    "cdc_batch_id",
]


def test_names_reach_the_yaml_as_text_dbt_renders_back_to_the_name():
    table = SourceTable("商城", "订单 {{ x }}", source_format="canal_json")
    columns = [SourceColumn("金额", "decimal(10,2)", "decimal(10,2)"), SourceColumn("{% raw %}", "geometry", None)]
    document = yaml.safe_load(schema_yaml(table, "shop__orders", columns))
    history, current = document["models"]
    # dbt renders names and descriptions with Jinja: each comes back as the name itself.
    render = jinja2.Environment().from_string
    names = [render(column["name"]).render() for column in history["columns"]]
    assert names == [*METADATA_YAML_COLUMNS, "金额", "{% raw %}"]
    assert render(history["description"]).render() == (
        "Every version of 商城.订单 {{ x }} (canal_json), one typed column per source column."
    )
    assert [column.get("data_type") for column in history["columns"][10:]] == ["decimal(10,2)", "string"]
    # A view's columns have their types by construction, and its rows' guarantees are cdc_history's (tested
    # there): no test of its own.
    assert all("data_tests" not in column for column in history["columns"] + current["columns"])
    assert "data_tests" not in history and "data_tests" not in current
    # What cdc-build matches against the changed source tables names the table by values dbt renders back to
    # the names.
    source_table = history["config"]["meta"]["cdc_source_table"]
    assert {key: render(value).render() for key, value in source_table.items()} == {
        "source_database": "商城",
        "source_table": "订单 {{ x }}",
        "source_format": "canal_json",
    }


def test_refresh_adds_new_columns_and_keeps_what_was_edited():
    table = SourceTable("shop", "orders", source_format="canal_json")
    before = schema_yaml(table, "shop__orders", [SourceColumn("id", "int", "int")])
    edited = yaml.safe_load(before)
    edited["models"][0]["description"] = "Orders, as the shop team sees them."
    edited["models"][0]["columns"][10]["data_tests"] = ["not_null"]
    edited["models"][0]["columns"].append({"name": "legacy", "description": "Dropped in 2025."})
    after = schema_yaml(
        table, "shop__orders", [SourceColumn("id", "bigint", "bigint"), SourceColumn("note", "text", "string")]
    )
    history = yaml.safe_load(refreshed_yaml(yaml.safe_dump(edited), after))["models"][0]
    assert history["description"] == "Orders, as the shop team sees them."
    by_name = {column["name"]: column for column in history["columns"]}
    assert by_name["id"] == {
        "name": "id",
        "description": "Source column id: bigint as bigint",
        "data_type": "bigint",
        "data_tests": ["not_null"],
    }
    assert by_name["note"]["data_type"] == "string"
    assert by_name["legacy"] == {"name": "legacy", "description": "Dropped in 2025."}


def test_refresh_drops_an_earlier_scaffolds_tests_and_keeps_edited_ones():
    table = SourceTable("shop", "orders", source_format="canal_json")
    earlier = yaml.safe_load(schema_yaml(table, "shop__orders", [SourceColumn("id", "int", "int")]))
    history, current = earlier["models"]
    arguments = {"source_database": "shop", "source_table": "orders", "source_format": "canal_json"}
    types_test = {
        "cdc_typed_columns_hold_their_types": {
            "name": "shop__orders__history_holds_its_source_types",
            "arguments": arguments,
        }
    }
    # What scaffolds before the model-level tests wrote: a test per key column, the type test alone.
    history["data_tests"] = [types_test, {"relationships": {"arguments": {"to": "ref('x')"}}}]
    by_name = {column["name"]: column for column in history["columns"]}
    for name in ("pk", "is_current", "is_deleted", "chain_id"):
        by_name[name]["data_tests"] = ["not_null"]
    by_name["scd_id"]["data_tests"] = ["not_null", "unique"]
    by_name["is_deleted"]["data_tests"] = ["not_null", "accepted_values"]  # edited: kept
    # What the scaffolds of typed tables wrote per model, one of them edited: kept.
    not_null = {
        "not_null_columns": {"arguments": {"columns": ["pk", "is_current", "is_deleted", "scd_id", "chain_id"]}}
    }
    edited_not_null = {"not_null_columns": {"arguments": {"columns": ["pk", "is_current"]}}}
    current_keys = {
        "cdc_typed_rows_hold": {"name": "shop__orders__current_holds_its_keys", "arguments": {"key_column": "chain_id"}}
    }
    current["data_tests"] = [
        edited_not_null,
        {"unique": {"arguments": {"column_name": "chain_id"}}},
        not_null,
        current_keys,
    ]
    # ...and the history's test of the last scaffold of typed tables.
    history_rows = {
        "cdc_typed_rows_hold": {
            "name": "shop__orders__history_holds_its_keys_and_types",
            "arguments": {"key_column": "scd_id", **arguments},
        }
    }
    history["data_tests"].append(history_rows)
    refreshed = yaml.safe_load(refreshed_yaml(yaml.safe_dump(earlier), schema_yaml(table, "shop__orders")))
    history, current = refreshed["models"]
    tests = {column["name"]: column.get("data_tests") for column in history["columns"]}
    assert tests["is_deleted"] == ["not_null", "accepted_values"]
    assert {name: tests[name] for name in ("pk", "is_current", "scd_id", "chain_id")} == dict.fromkeys(
        ("pk", "is_current", "scd_id", "chain_id")
    )
    assert [next(iter(test)) for test in history["data_tests"]] == ["relationships"]
    assert current["data_tests"] == [edited_not_null]


# The history SQL the scaffolds of typed tables merged per batch wrote for shop.orders (its metadata columns
# shortened): as a view it would stamp every version with the batch the view was created in.
EARLIER_HISTORY_SQL = """\
-- Written by cdc-scaffold: every version of the source table, one typed column per source column,
-- merged by scd_id from the versions cdc_history wrote in the batches this model has not read.
{{ config(unique_key='scd_id', enabled=cdc_format_enabled('canal_json')) }}
{%- set batch = cdc_batch() %}
select
    versions.pk,
    {{ cdc_batch_id(batch) }} as cdc_batch_id
    {{- cdc_typed_columns('versions', "shop", "orders", source_format="canal_json") }}
from {{ ref('cdc_history') }} as versions
where
    {{ cdc_source_table_filter('versions', "shop", "orders", source_format="canal_json") }}
    and {{ cdc_in_batch(batch, 'versions.cdc_batch_id') }}
"""


def test_refresh_writes_an_earlier_scaffolds_typed_table_sql_again(tmp_path):
    table = SourceTable("shop", "orders", source_format="canal_json")
    bases = ["shop__orders"]
    write_files(plan_files([table], bases, {}, tmp_path))
    history = tmp_path / "models" / "tables" / "shop__orders__history.sql"
    history.write_text(EARLIER_HISTORY_SQL)
    assert [file.status for file in plan_files([table], bases, {}, tmp_path)] == ["kept", "unchanged", "unchanged"]
    refreshed = plan_files([table], bases, {}, tmp_path, refresh=True)
    assert [file.status for file in refreshed] == ["refreshed", "unchanged", "unchanged"]
    write_files(refreshed)
    assert "cdc_batch()" not in history.read_text()
    assert "versions.cdc_batch_id" in history.read_text()


def test_existing_files_are_reported_and_kept_unless_forced(tmp_path):
    table = SourceTable("shop", "orders", source_format="canal_json")
    columns = {table: [SourceColumn("id", "int", "int")]}
    bases = ["shop__orders"]
    first = plan_files([table], bases, columns, tmp_path)
    assert [(file.path.name, file.status) for file in first] == [
        ("shop__orders__history.sql", "new"),
        ("shop__orders__current.sql", "new"),
        ("_shop__orders__models.yml", "new"),
    ]
    write_files(first)
    current = tmp_path / "models" / "tables" / "shop__orders__current.sql"
    current.write_text("-- edited\n" + current.read_text())
    wider = {table: [SourceColumn("id", "bigint", "bigint")]}
    assert [file.status for file in plan_files([table], bases, columns, tmp_path)] == ["unchanged", "kept", "unchanged"]
    assert [file.status for file in plan_files([table], bases, wider, tmp_path)] == ["unchanged", "kept", "kept"]
    assert [file.status for file in plan_files([table], bases, wider, tmp_path, refresh=True)] == [
        "unchanged",
        "kept",
        "refreshed",
    ]
    # --force --refresh: the SQL as written now, the YAML refreshed with its edits kept.
    assert [file.status for file in plan_files([table], bases, wider, tmp_path, force=True, refresh=True)] == [
        "unchanged",
        "overwritten",
        "refreshed",
    ]
    forced = plan_files([table], bases, wider, tmp_path, force=True)
    assert [file.status for file in forced] == ["unchanged", "overwritten", "overwritten"]
    write_files(forced)
    assert not current.read_text().startswith("-- edited")
