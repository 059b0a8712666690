"""The type layer: type seeds, normalization, parse rules, typed tables per source table, cdc-scaffold.

Expected values are written out by hand from the vendor texts (epoch values converted by hand, UTC).
"""

import json
import re
import sys

import pytest
from helpers import (
    PROJECT_DIR,
    Warehouse,
    assert_succeeded,
    dbt_show_in_process,
    read_view,
    typed_text_sql,
)

from cdc_lakehouse.scaffold import main
from cdc_lakehouse.typed_model_files import HISTORY_METADATA_COLUMNS, scaffold_files
from cdc_lakehouse.typed_model_names import SourceTable, jinja_string, model_bases, parse_table

# (value as a SQL literal, parse rule, Spark type) -> "typeof|text" (binary as upper-case hex).
RULE_CASES = [
    ("'103'", "cast", "int", "int|103"),
    ("'abc'", "cast", "int", "int|NULL"),
    ("'1.2510357E7'", "cast", "double", "double|1.2510357E7"),
    ("'18446744073709551615'", "cast", "decimal(20,0)", "decimal(20,0)|18446744073709551615"),
    ("'1'", "boolean_from_int", "boolean", "boolean|true"),
    ("'0'", "boolean_from_int", "boolean", "boolean|false"),
    ("'true'", "boolean_from_int", "boolean", "boolean|true"),
    ("'30.945'", "decimal_from_params", "decimal(12,2)", "decimal(12,2)|30.95"),
    ("'9874510357'", "decimal_from_params", "decimal(10,2)", "decimal(10,2)|NULL"),
    # StreamX DATE: 13-digit epoch milliseconds (the vendor's ts example 1590315269000).
    ("'1590315269000'", "epoch_millis", "timestamp", "timestamp|2020-05-24 10:14:29"),
    ("'1649991610688000'", "epoch_micros", "timestamp", "timestamp|2022-04-15 03:00:10.688"),
    # Huawei DRS JSON MySQL timestamp "seconds.millis" (the vendor's c5).
    ("'1624614713.201'", "epoch_seconds_fraction", "timestamp", "timestamp|2021-06-25 09:51:53.201"),
    # Tencent DTS TIMESTAMP with its zone suffix; GaussDB tstz "+08"; a "+0800" offset; no zone = UTC.
    ("'2021-05-17 07:22:42 +00:00'", "timestamp_with_zone", "timestamp", "timestamp|2021-05-17 07:22:42"),
    ("'2010-01-01 14:30:00+08'", "timestamp_with_zone", "timestamp", "timestamp|2010-01-01 06:30:00"),
    ("'2021-05-17 15:22:42 +0800'", "timestamp_with_zone", "timestamp", "timestamp|2021-05-17 07:22:42"),
    ("'2021-05-17 07:22:42'", "timestamp_with_zone", "timestamp", "timestamp|2021-05-17 07:22:42"),
    ("'2021-06-25 17:51:53'", "cast", "timestamp_ntz", "timestamp_ntz|2021-06-25 17:51:53"),
    ("'aGVsbG8='", "base64", "binary", "binary|68656C6C6F"),
    ("'[106, -103, 0]'", "java_byte_list", "binary", "binary|6A9900"),
    ("'[]'", "java_byte_list", "binary", "binary|"),
    ("'aGVsbG8='", "java_byte_list", "binary", "binary|68656C6C6F"),
    # GaussDB bytea from the DRS example: "62797465615f64617461" is "bytea_data"; with a \x prefix too.
    ("'62797465615f64617461'", "hex_bytea", "binary", "binary|62797465615F64617461"),
    ("'\\\\x6869'", "hex_bytea", "binary", "binary|6869"),
    ('\'{"$numberLong": "5"}\'', "bson_scalar", "bigint", "bigint|5"),
    (
        '\'{"$oid": "64650cf67dc36a464e76e583"}\'',
        "bson_scalar",
        "string",
        "string|64650cf67dc36a464e76e583",
    ),
    ('\'{"$date": "2023-05-17T09:18:31.439Z"}\'', "bson_date", "timestamp", "timestamp|2023-05-17 09:18:31.439"),
    (
        '\'{"$date": {"$numberLong": "1684315111439"}}\'',
        "bson_date",
        "timestamp",
        "timestamp|2023-05-17 09:18:31.439",
    ),
]

# vendor type text -> (base, params, lookup key)
NORMALIZATION_CASES = [
    ("int(11) unsigned", "int", ["11"], "int unsigned"),
    ("bigint(20) unsigned zerofill", "bigint", ["20"], "bigint unsigned"),
    ("tinyint(1)", "tinyint", ["1"], "tinyint(1)"),
    ("tinyint(4)", "tinyint", ["4"], "tinyint"),
    ("decimal(10, 2)", "decimal", ["10", "2"], "decimal"),
    ("TIMESTAMP(6) WITH TIME ZONE", "timestamp with time zone", ["6"], "timestamp with time zone"),
    ("NUMBER(10,2)", "number", ["10", "2"], "number"),
    ("timestamp without time zone", "timestamp without time zone", [], "timestamp without time zone"),
    ("int4[]", "array", [], "array"),
    ("_int4", "array", [], "array"),
    ("93", "93", [], "93"),
    ("LONG", "long", [], "long"),
]


def dbt_show(warehouse: Warehouse, sql: str, *extra: str, limit: int = 100) -> list[dict]:
    # dbt show appends its own limit clause: a query must not end with one.
    shown = warehouse.dbt("show", "--inline", sql, "--output", "json", "--limit", str(limit), *extra)
    assert_succeeded(shown)
    return json.loads(shown.stdout[shown.stdout.index("{\n") :])["show"]


def test_each_parse_rule_types_values(spark, dbt_work_dir):
    columns = []
    for number, (value, rule, spark_type, _) in enumerate(RULE_CASES):
        typed = f"{{{{ cdc_typed_value({json.dumps(value)}, '{rule}', '{spark_type}') }}}}"
        columns.append(f"{typed_text_sql(typed)} as case_{number}")
    (row,) = dbt_show_in_process(spark, dbt_work_dir, "select " + ", ".join(columns))
    assert [row[f"case_{n}"] for n in range(len(RULE_CASES))] == [case[3] for case in RULE_CASES]


def test_vendor_type_text_is_normalized(spark, dbt_work_dir):
    selects = [
        f"select {number} as case_number, to_json({{{{ cdc_normalized_type({json.dumps(repr(text))}) }}}}) as parts"
        for number, (text, *_) in enumerate(NORMALIZATION_CASES)
    ]
    rows = dbt_show_in_process(spark, dbt_work_dir, " union all ".join(selects) + " order by case_number")
    got = [json.loads(row["parts"]) for row in rows]
    assert [(g["base"], g["params"], g["lookup_key"]) for g in got] == [case[1:] for case in NORMALIZATION_CASES]


def test_tinyint1_var_turns_boolean_off(spark, dbt_work_dir):
    sql = "select {{ cdc_type_lookup_key(\"'tinyint(1)'\") }} as lookup_key"
    assert dbt_show_in_process(spark, dbt_work_dir, sql) == [{"lookup_key": "tinyint(1)"}]
    rows = dbt_show_in_process(spark, dbt_work_dir, sql, dbt_vars={"cdc_tinyint1_as_boolean": False})
    assert rows == [{"lookup_key": "tinyint"}]


def test_sample_vendor_types_resolve_to_these_mappings(built_warehouse):
    rows = dbt_show(
        built_warehouse,
        "select source_format, vendor_type_text, type_family, spark_type, parse_rule"
        " from {{ ref('cdc_vendor_types') }}",
        limit=1000,
    )
    resolved = {
        (r["source_format"], r["vendor_type_text"]): (r["type_family"], r["spark_type"], r["parse_rule"]) for r in rows
    }
    assert resolved[("huawei_drs_json", "timestamp")] == ("mysql", "timestamp", "epoch_seconds_fraction")
    assert resolved[("huawei_drs_json", "varbinary")] == ("mysql", "binary", "java_byte_list")
    assert resolved[("huawei_drs_json", "decimal")] == ("mysql", "decimal(38,10)", "decimal_from_params")
    assert resolved[("huawei_drs_json", "datetime")] == ("mysql", "timestamp_ntz", "cast")
    assert resolved[("tencent_dts_protobuf", "bigint(20) unsigned")] == ("mysql", "decimal(20,0)", "cast")
    assert resolved[("tencent_dts_protobuf", "decimal(10,2)")] == ("mysql", "decimal(10,2)", "decimal_from_params")
    assert resolved[("tencent_dts_protobuf", "timestamp")] == ("mysql", "timestamp", "timestamp_with_zone")
    assert resolved[("tencent_dts_protobuf", "varchar(64)")] == ("mysql", "string", "cast")
    # The one type no seed maps is the one own_schema_evolution.jsonl brings on purpose.
    assert [key for key, (_, _, rule) in resolved.items() if rule is None] == [("huawei_drs_json", "geometryzz")]


def test_typed_history_of_the_sample_orders(spark, built_warehouse):
    history = read_view(spark, built_warehouse, "shop__orders__huawei_drs_json__history")
    rows = [
        row.asDict()
        for row in history.where("pk = '[\"1\"]'")
        .orderBy("valid_from")
        .selectExpr(
            "pk",
            "cast(order_id as string) as order_id",
            "typeof(order_id) as order_id_type",
            "cast(amount as string) as amount",
            "typeof(amount) as amount_type",
            "hex(note) as note",
            "cast(created_at as string) as created_at",
            "typeof(created_at) as created_at_type",
            "cast(updated_at as string) as updated_at",
            "typeof(updated_at) as updated_at_type",
            "customer",
            "is_current",
        )
        .limit(1)
        .collect()
    ]
    # The first sample message: order 1 inserted, note "[-18, 31, 75, 66]", updated_at "1772438400.000".
    assert rows == [
        {
            "pk": '["1"]',
            "order_id": "1",
            "order_id_type": "bigint",
            "amount": "30.9400000000",
            "amount_type": "decimal(38,10)",
            "note": "EE1F4B42",
            "created_at": "2026-03-02 08:00:00",
            "created_at_type": "timestamp_ntz",
            "updated_at": "2026-03-02 08:00:00",
            "updated_at_type": "timestamp",
            "customer": "王芳",
            "is_current": False,
        }
    ]


def test_scaffold_names_and_literals_are_safe():
    table = SourceTable(database='sh"op}}', table="Or-ders `x`", source_format="huawei_drs_json")
    files = scaffold_files(table)
    assert set(files) == {
        "sh_op__or_ders_x__history.sql",
        "sh_op__or_ders_x__current.sql",
        "_sh_op__or_ders_x__models.yml",
    }
    # The names reach the SQL only as escaped Jinja string literals, in the two macro calls.
    history = files["sh_op__or_ders_x__history.sql"]
    # config, history_chain_id, ref('cdc_history') and the two calls
    assert history.count("}}") == 5
    assert '"sh\\"op\\u007d\\u007d", "Or-ders `x`"' in history
    assert 'sh"op' not in files["sh_op__or_ders_x__current.sql"]
    assert jinja_string("a{%b") == '"a\\u007b\\u0025b"'
    assert parse_table("db.sch.t") == SourceTable(database="db", schema="sch", table="t")
    # One table from two streams: each model names its format.
    assert model_bases([SourceTable("a", "b", source_format="x"), SourceTable("a", "b", source_format="y")]) == [
        "a__b__x",
        "a__b__y",
    ]


def test_scaffold_keeps_the_metadata_columns_the_macros_reserve():
    macros = (PROJECT_DIR / "macros" / "types" / "cdc_typed_tables.sql").read_text()
    reserved = macros.split("macro cdc_typed_table_metadata_columns", 1)[1].split("endmacro", 1)[0]
    assert tuple(re.findall(r"'([a-z_]+)'", reserved)) == HISTORY_METADATA_COLUMNS


@pytest.mark.parametrize("argv", [["orders"], ["a..b"], ["--source-format", "nope", "a.b"], ["--bogus"]])
def test_scaffold_bad_arguments_are_one_line_and_exit_2(argv, capsys, tmp_path):
    assert main([*argv, "--project-dir", str(PROJECT_DIR)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cdc-scaffold: error: ") and err.count("\n") == 1


def test_unmapped_vendor_type_is_a_warning_not_a_failed_build(built_warehouse):
    # own_schema_evolution.jsonl brings the one type no seed maps; every other vendor type is mapped. The
    # build that built the warehouse succeeded (the fixture checks it) and warned of it.
    assert re.search(
        r"Warning in test cdc_every_vendor_type_is_mapped\b.*?Got 1 result, configured to warn",
        built_warehouse.build_output,
        re.S,
    ), built_warehouse.build_output[-3000:]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
