"""Every row of the type seeds, applied to a real value of its vendor type.

For each (type family, vendor type, value encoding) of seeds/cdc_types__<family>.csv there is one case: a
value as that vendor writes it (from the vendor documents and examples where they give one) and the typed
value written by hand as "typeof|text" (binary as upper-case hex, NULL for null). The seed row supplies the
Spark type and parse rule, as cdc_typed_value receives them in a typed table; a seed row without a case, or
a case without a seed row, fails the test. Wall-clock text of a `timestamp` is read in the source's zone:
the cases marked with a zone are a source in Asia/Shanghai (UTC+8), the others UTC.
"""

import csv
import json

import pytest
from helpers import PROJECT_DIR, dbt_show_in_process, typed_text_sql

SHANGHAI = "Asia/Shanghai"
HELLO_BASE64, HELLO_HEX = "aGVsbG8=", "68656C6C6F"
# POINT(1 1) as WKB, base64: MySQL spatial values as Canal and DTS carry them.
POINT_BASE64, POINT_HEX = "AQEAAAAAAAAAAADwPwAAAAAAAPA/", "0101000000000000000000F03F000000000000F03F"
# Huawei DRS JSON writes binary as a Java byte list (its example c12 "[106, 103, 111]").
BYTE_LIST, BYTE_LIST_HEX = "[106, -103, 0]", "6A9900"
# GaussDB / Oracle / SQL Server binary as hex text (the DRS GaussDB example "62797465615f64617461").
BYTEA, BYTEA_HEX = "62797465615f64617461", "62797465615F64617461"


def text(family: str, *vendor_types: str, value: str = "王芳 O'Brien") -> list[tuple]:
    """Cases of types kept as text: the value comes back as it is."""
    return [(family, vendor_type, "default", value, f"string|{value}") for vendor_type in vendor_types]


# (family, vendor type, value encoding, value or None, "typeof|text"[, source zone])
CASES: list[tuple] = [
    # MySQL (Canal, KafkaRiver, DRS JSON-C, DTS, and DRS JSON / Avro with their own encoding).
    ("mysql", "tinyint", "default", "-128", "tinyint|-128"),
    ("mysql", "tinyint unsigned", "default", "255", "smallint|255"),
    ("mysql", "tinyint(1)", "default", "1", "boolean|true"),
    ("mysql", "smallint", "default", "-32768", "smallint|-32768"),
    ("mysql", "smallint unsigned", "default", "65535", "int|65535"),
    ("mysql", "mediumint", "default", "-8388608", "int|-8388608"),
    ("mysql", "mediumint unsigned", "default", "16777215", "int|16777215"),
    ("mysql", "int", "default", "-2147483648", "int|-2147483648"),
    ("mysql", "int unsigned", "default", "4294967295", "bigint|4294967295"),
    ("mysql", "integer", "default", "103", "int|103"),
    ("mysql", "integer unsigned", "default", "4294967295", "bigint|4294967295"),
    ("mysql", "bigint", "default", "-9223372036854775808", "bigint|-9223372036854775808"),
    ("mysql", "bigint unsigned", "default", "18446744073709551615", "decimal(20,0)|18446744073709551615"),
    ("mysql", "bit", "default", "5", "bigint|5"),
    ("mysql", "bool", "default", "0", "boolean|false"),
    ("mysql", "boolean", "default", "1", "boolean|true"),
    ("mysql", "float", "default", "3.14", "float|3.14"),
    ("mysql", "double", "default", "1.2510357E7", "double|1.2510357E7"),
    ("mysql", "double precision", "default", "2.5", "double|2.5"),
    ("mysql", "real", "default", "0.1", "double|0.1"),
    # Bare decimal types (DRS mysqlType strips the parameters): decimal(38,10).
    ("mysql", "decimal", "default", "30.945", "decimal(38,10)|30.9450000000"),
    ("mysql", "numeric", "default", "-577.90", "decimal(38,10)|-577.9000000000"),
    ("mysql", "dec", "default", "0.5", "decimal(38,10)|0.5000000000"),
    ("mysql", "fixed", "default", "12", "decimal(38,10)|12.0000000000"),
    ("mysql", "date", "default", "2026-03-02", "date|2026-03-02"),
    ("mysql", "datetime", "default", "2026-03-02 08:00:00", "timestamp_ntz|2026-03-02 08:00:00"),
    # A MySQL timestamp without an offset is wall-clock time of the source's zone.
    ("mysql", "timestamp", "default", "2026-03-02 08:00:00", "timestamp|2026-03-02 00:00:00", SHANGHAI),
    # DRS JSON: epoch seconds with a millisecond fraction (the vendor's c5).
    ("mysql", "timestamp", "huawei_drs_json", "1624614713.201", "timestamp|2021-06-25 09:51:53.201", SHANGHAI),
    ("mysql", "time", "default", "08:00:00", "string|08:00:00"),
    ("mysql", "year", "default", "2026", "int|2026"),
    *text("mysql", "char", "varchar", "tinytext", "text", "mediumtext", "longtext"),
    ("mysql", "enum", "default", "paid", "string|paid"),
    ("mysql", "set", "default", "a,b", "string|a,b"),
    ("mysql", "json", "default", '{"a": [1, 2]}', 'string|{"a": [1, 2]}'),
    ("mysql", "vector", "default", "[1.5,2]", "string|[1.5,2]"),
    *[
        ("mysql", vendor_type, "default", HELLO_BASE64, f"binary|{HELLO_HEX}")
        for vendor_type in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
    ],
    *[
        ("mysql", vendor_type, "huawei_drs_json", BYTE_LIST, f"binary|{BYTE_LIST_HEX}")
        for vendor_type in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
    ],
    *[
        ("mysql", vendor_type, "default", POINT_BASE64, f"binary|{POINT_HEX}")
        for vendor_type in (
            "geometry",
            "point",
            "linestring",
            "polygon",
            "multipoint",
            "multilinestring",
            "multipolygon",
            "geometrycollection",
        )
    ],
    # Tencent DTS: the protobuf DataType of each value.
    ("tencent_dts", "nil", "default", None, "string|NULL"),
    ("tencent_dts", "int8", "default", "-128", "tinyint|-128"),
    ("tencent_dts", "int16", "default", "-32768", "smallint|-32768"),
    ("tencent_dts", "int32", "default", "-2147483648", "int|-2147483648"),
    ("tencent_dts", "int64", "default", "9223372036854775807", "bigint|9223372036854775807"),
    ("tencent_dts", "uint8", "default", "255", "smallint|255"),
    ("tencent_dts", "uint16", "default", "65535", "int|65535"),
    ("tencent_dts", "uint32", "default", "4294967295", "bigint|4294967295"),
    ("tencent_dts", "uint64", "default", "18446744073709551615", "decimal(20,0)|18446744073709551615"),
    ("tencent_dts", "float32", "default", "1.5", "float|1.5"),
    ("tencent_dts", "float64", "default", "2.25", "double|2.25"),
    ("tencent_dts", "bytes", "default", "3q2+7w==", "binary|DEADBEEF"),
    ("tencent_dts", "decimal", "default", "577.90", "decimal(38,10)|577.9000000000"),
    *text("tencent_dts", "string", "na", value="李伟"),
    # DataWorks StreamX: DATE is epoch milliseconds (the vendor's 1590315269000).
    ("streamx", "boolean", "default", "true", "boolean|true"),
    ("streamx", "double", "default", "3.5", "double|3.5"),
    ("streamx", "date", "default", "1590315269000", "timestamp|2020-05-24 10:14:29", SHANGHAI),
    ("streamx", "bytes", "default", HELLO_BASE64, f"binary|{HELLO_HEX}"),
    ("streamx", "long", "default", "1234567890123", "bigint|1234567890123"),
    *text("streamx", "string"),
    # DataHub tuples: TIMESTAMP is epoch microseconds.
    ("datahub", "tinyint", "default", "-1", "tinyint|-1"),
    ("datahub", "smallint", "default", "300", "smallint|300"),
    ("datahub", "integer", "default", "70000", "int|70000"),
    ("datahub", "bigint", "default", "5000000000", "bigint|5000000000"),
    ("datahub", "float", "default", "1.25", "float|1.25"),
    ("datahub", "double", "default", "1.0E-5", "double|1.0E-5"),
    ("datahub", "decimal", "default", "30.945", "decimal(38,18)|30.945000000000000000"),
    ("datahub", "boolean", "default", "false", "boolean|false"),
    ("datahub", "timestamp", "default", "1649991610688000", "timestamp|2022-04-15 03:00:10.688", SHANGHAI),
    *text("datahub", "string"),
    # MongoDB (DRS DDS): each field as Extended JSON v2 relaxed, as cdc_mongo_shell_fields writes it.
    ("mongodb", "double", "default", "1.5", "double|1.5"),
    ("mongodb", "string", "default", "王芳", "string|王芳"),
    ("mongodb", "object", "default", '{"city":"杭州"}', 'string|{"city":"杭州"}'),
    ("mongodb", "array", "default", "[1,2]", "string|[1,2]"),
    (
        "mongodb",
        "bindata",
        "default",
        '{"$binary":{"base64":"aGVsbG8=","subType":"00"}}',
        'string|{"$binary":{"base64":"aGVsbG8=","subType":"00"}}',
    ),
    ("mongodb", "undefined", "default", '{"$undefined":true}', 'string|{"$undefined":true}'),
    ("mongodb", "objectid", "default", '{"$oid":"64650cf67dc36a464e76e583"}', "string|64650cf67dc36a464e76e583"),
    ("mongodb", "bool", "default", "true", "boolean|true"),
    ("mongodb", "date", "default", '{"$date":"2023-05-17T09:18:31.439Z"}', "timestamp|2023-05-17 09:18:31.439"),
    ("mongodb", "null", "default", None, "string|NULL"),
    (
        "mongodb",
        "regex",
        "default",
        '{"$regularExpression":{"pattern":"^a","options":"i"}}',
        'string|{"$regularExpression":{"pattern":"^a","options":"i"}}',
    ),
    (
        "mongodb",
        "dbpointer",
        "default",
        '{"$dbPointer":{"$ref":"c","$id":{"$oid":"64650cf67dc36a464e76e583"}}}',
        'string|{"$dbPointer":{"$ref":"c","$id":{"$oid":"64650cf67dc36a464e76e583"}}}',
    ),
    ("mongodb", "javascript", "default", '{"$code":"function() {}"}', 'string|{"$code":"function() {}"}'),
    ("mongodb", "symbol", "default", '{"$symbol":"s"}', 'string|{"$symbol":"s"}'),
    ("mongodb", "int", "default", "42", "int|42"),
    (
        "mongodb",
        "timestamp",
        "default",
        '{"$timestamp":{"t":1684315111,"i":1}}',
        'string|{"$timestamp":{"t":1684315111,"i":1}}',
    ),
    ("mongodb", "long", "default", '{"$numberLong":"9007199254740993"}', "bigint|9007199254740993"),
    ("mongodb", "decimal", "default", '{"$numberDecimal":"30.94"}', "decimal(38,10)|30.9400000000"),
    ("mongodb", "minkey", "default", '{"$minKey":1}', 'string|{"$minKey":1}'),
    ("mongodb", "maxkey", "default", '{"$maxKey":1}', 'string|{"$maxKey":1}'),
    # Oracle (DRS JSON and Avro): DATE and TIMESTAMP are wall-clock; NUMBER without parameters.
    ("oracle", "number", "default", "12345.6789", "decimal(38,10)|12345.6789000000"),
    ("oracle", "numeric", "default", "1", "decimal(38,10)|1.0000000000"),
    ("oracle", "decimal", "default", "-0.25", "decimal(38,10)|-0.2500000000"),
    ("oracle", "integer", "default", "99999999999999999999", "decimal(38,0)|99999999999999999999"),
    ("oracle", "int", "default", "7", "decimal(38,0)|7"),
    ("oracle", "smallint", "default", "-7", "decimal(38,0)|-7"),
    ("oracle", "float", "default", "6.02E23", "double|6.02E23"),
    ("oracle", "binary_float", "default", "1.5", "float|1.5"),
    ("oracle", "binary_double", "default", "2.5E-10", "double|2.5E-10"),
    *text("oracle", "char", "nchar", "varchar", "varchar2", "nvarchar2", "clob", "nclob", "long"),
    *text("oracle", "rowid", "urowid", value="AAAR3sAAEAAAACXAAA"),
    *text("oracle", "xmltype", value="<a>1</a>"),
    *text("oracle", "json", value='{"a":1}'),
    ("oracle", "date", "default", "2026-03-02 08:00:00", "timestamp_ntz|2026-03-02 08:00:00"),
    ("oracle", "timestamp", "default", "2026-03-02 08:00:00.123456", "timestamp_ntz|2026-03-02 08:00:00.123456"),
    (
        "oracle",
        "timestamp with time zone",
        "default",
        "2026-03-02 08:00:00 +08:00",
        "timestamp|2026-03-02 00:00:00",
    ),
    (
        "oracle",
        "timestamp with local time zone",
        "default",
        "2026-03-02 08:00:00",
        "timestamp|2026-03-02 00:00:00",
        SHANGHAI,
    ),
    *text("oracle", "interval year to month", value="+02-06"),
    *text("oracle", "interval day to second", value="+01 02:03:04.000000"),
    *[("oracle", vendor_type, "default", BYTEA, f"binary|{BYTEA_HEX}") for vendor_type in ("raw", "long raw", "blob")],
    *text("oracle", "bfile", value="bfilename('DIR', 'a.pdf')"),
    # PostgreSQL and GaussDB.
    *[("postgresql", t, "default", "-32768", "smallint|-32768") for t in ("smallint", "int2", "smallserial")],
    *[("postgresql", t, "default", "2147483647", "int|2147483647") for t in ("integer", "int", "int4", "serial")],
    *[
        ("postgresql", t, "default", "9223372036854775807", "bigint|9223372036854775807")
        for t in ("bigint", "int8", "bigserial")
    ],
    ("postgresql", "oid", "default", "4294967295", "bigint|4294967295"),
    ("postgresql", "tinyint", "default", "255", "smallint|255"),
    *[("postgresql", t, "default", "1.5", "float|1.5") for t in ("real", "float4")],
    *[
        ("postgresql", t, "default", "2.5E-10", "double|2.5E-10")
        for t in ("double precision", "float8", "float", "binary_double")
    ],
    *[("postgresql", t, "default", "30.945", "decimal(38,10)|30.9450000000") for t in ("numeric", "decimal", "number")],
    *text("postgresql", "money", value="$1,234.56"),
    ("postgresql", "boolean", "default", "true", "boolean|true"),
    ("postgresql", "bool", "default", "false", "boolean|false"),
    *text(
        "postgresql",
        "character",
        "char",
        "bpchar",
        "character varying",
        "varchar",
        "varchar2",
        "nvarchar2",
        "text",
        "clob",
        "name",
        "citext",
    ),
    *text("postgresql", "uuid", value="a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    *text("postgresql", "json", "jsonb", value='{"a": 1}'),
    *text("postgresql", "xml", value="<a>1</a>"),
    *[("postgresql", t, "default", BYTEA, f"binary|{BYTEA_HEX}") for t in ("bytea", "blob", "raw")],
    ("postgresql", "date", "default", "2026-03-02", "date|2026-03-02"),
    *[
        ("postgresql", t, "default", "2026-03-02 08:00:00", "timestamp_ntz|2026-03-02 08:00:00")
        for t in ("timestamp", "timestamp without time zone", "smalldatetime")
    ],
    # GaussDB's tstz "+08" (the DRS example) and a PostgreSQL one without an offset, in the source's zone.
    ("postgresql", "timestamptz", "default", "2010-01-01 14:30:00+08", "timestamp|2010-01-01 06:30:00"),
    (
        "postgresql",
        "timestamp with time zone",
        "default",
        "2010-01-01 14:30:00",
        "timestamp|2010-01-01 06:30:00",
        SHANGHAI,
    ),
    *text("postgresql", "time", "time without time zone", value="08:00:00"),
    *text("postgresql", "timetz", "time with time zone", value="08:00:00+08"),
    *text("postgresql", "interval", value="1 day 02:00:00"),
    *text("postgresql", "bit", "bit varying", "varbit", value="1011"),
    *text("postgresql", "inet", "cidr", value="192.168.0.0/24"),
    *text("postgresql", "macaddr", "macaddr8", value="08:00:2b:01:02:03"),
    *text("postgresql", "point", value="(1,1)"),
    *text("postgresql", "line", value="{1,-1,0}"),
    *text("postgresql", "lseg", "box", "path", value="((0,0),(1,1))"),
    *text("postgresql", "polygon", value="((0,0),(1,0),(1,1))"),
    *text("postgresql", "circle", value="<(0,0),1>"),
    *text("postgresql", "tsvector", value="'a':1 'b':2"),
    *text("postgresql", "tsquery", value="'a' & 'b'"),
    *text("postgresql", "int4range", "int8range", "numrange", value="[1,10)"),
    *text("postgresql", "tsrange", "tstzrange", value='["2026-03-02 08:00:00","2026-03-03 08:00:00")'),
    *text("postgresql", "daterange", value="[2026-03-02,2026-03-03)"),
    *text("postgresql", "hstore", value='"a"=>"1"'),
    *text("postgresql", "array", value="{1,2,3}"),
    # SQL Server.
    ("sqlserver", "bit", "default", "1", "boolean|true"),
    ("sqlserver", "tinyint", "default", "255", "smallint|255"),
    ("sqlserver", "smallint", "default", "-32768", "smallint|-32768"),
    ("sqlserver", "int", "default", "-2147483648", "int|-2147483648"),
    ("sqlserver", "bigint", "default", "9223372036854775807", "bigint|9223372036854775807"),
    ("sqlserver", "decimal", "default", "30.945", "decimal(38,10)|30.9450000000"),
    ("sqlserver", "numeric", "default", "-1.5", "decimal(38,10)|-1.5000000000"),
    ("sqlserver", "money", "default", "922337203685477.5807", "decimal(19,4)|922337203685477.5807"),
    ("sqlserver", "smallmoney", "default", "-214748.3648", "decimal(10,4)|-214748.3648"),
    ("sqlserver", "float", "default", "1.7976931348623157E308", "double|1.7976931348623157E308"),
    ("sqlserver", "real", "default", "3.5", "float|3.5"),
    ("sqlserver", "date", "default", "2026-03-02", "date|2026-03-02"),
    *[
        ("sqlserver", t, "default", "2026-03-02 08:00:00.123", "timestamp_ntz|2026-03-02 08:00:00.123")
        for t in ("datetime", "datetime2", "smalldatetime")
    ],
    ("sqlserver", "datetimeoffset", "default", "2026-03-02 08:00:00 +08:00", "timestamp|2026-03-02 00:00:00"),
    *text("sqlserver", "time", value="08:00:00.1234567"),
    *text("sqlserver", "char", "varchar", "text", "nchar", "nvarchar", "ntext", "sysname"),
    *[
        ("sqlserver", t, "default", BYTEA, f"binary|{BYTEA_HEX}")
        for t in ("binary", "varbinary", "image", "timestamp", "rowversion")
    ],
    *text("sqlserver", "uniqueidentifier", value="6F9619FF-8B86-D011-B42D-00C04FC964FF"),
    *text("sqlserver", "xml", value="<a>1</a>"),
    *text("sqlserver", "sql_variant", "hierarchyid", value="/1/2/"),
    *text("sqlserver", "geography", "geometry", value="POINT (1 1)"),
    # JDBC codes (DRS sqlType): the java.sql.Types of each column.
    *text("jdbc", "-16", "-15", "-9", "-1", "1", "12", "2005", "2011"),
    *text("jdbc", "-8", value="AAAR3sAAEAAAACXAAA"),
    ("jdbc", "-7", "default", "1", "boolean|true"),
    ("jdbc", "-6", "default", "255", "smallint|255"),
    ("jdbc", "-5", "default", "18446744073709551615", "decimal(20,0)|18446744073709551615"),
    *[("jdbc", code, "default", HELLO_BASE64, f"binary|{HELLO_HEX}") for code in ("-4", "-3", "-2", "2004")],
    *[("jdbc", code, "huawei_drs_json", BYTE_LIST, f"binary|{BYTE_LIST_HEX}") for code in ("-4", "-3", "-2", "2004")],
    *text("jdbc", "0", value=""),
    ("jdbc", "2", "default", "30.945", "decimal(38,10)|30.9450000000"),
    ("jdbc", "3", "default", "-30.945", "decimal(38,10)|-30.9450000000"),
    ("jdbc", "4", "default", "4294967295", "bigint|4294967295"),
    ("jdbc", "5", "default", "65535", "int|65535"),
    ("jdbc", "6", "default", "0.1", "double|0.1"),
    ("jdbc", "7", "default", "1.5", "float|1.5"),
    ("jdbc", "8", "default", "2.5", "double|2.5"),
    ("jdbc", "16", "default", "0", "boolean|false"),
    *text("jdbc", "70", value="http://example.com/"),
    ("jdbc", "91", "default", "2026-03-02", "date|2026-03-02"),
    *text("jdbc", "92", value="08:00:00"),
    ("jdbc", "93", "default", "2026-03-02 08:00:00", "timestamp_ntz|2026-03-02 08:00:00"),
    ("jdbc", "93", "huawei_drs_json", "1624614713.201", "timestamp|2021-06-25 09:51:53.201", SHANGHAI),
    ("jdbc", "94", "default", "2026-03-02 08:00:00", "timestamp_ntz|2026-03-02 08:00:00"),
    *text("jdbc", "1111", value="{1,2}"),
    *text("jdbc", "2000", value="[object]"),
    *text("jdbc", "2002", "2003", "2009", "2006", value="(1,2)"),
    *text("jdbc", "2013", value="08:00:00+08:00"),
    ("jdbc", "2014", "default", "2026-03-02 08:00:00 +08:00", "timestamp|2026-03-02 00:00:00"),
]


def seed_rows() -> dict[tuple[str, str, str], tuple[str, str]]:
    """(family, vendor type, value encoding) -> (Spark type, parse rule), from every type seed."""
    rows = {}
    for path in sorted((PROJECT_DIR / "seeds").glob("cdc_types__*.csv")):
        family = path.stem.removeprefix("cdc_types__")
        with path.open(newline="", encoding="utf-8") as seed:
            for row in csv.DictReader(seed):
                rows[(family, row["vendor_type"], row["value_encoding"])] = (row["spark_type"], row["parse_rule"])
    return rows


def test_every_seed_row_has_one_case():
    keys = [case[:3] for case in CASES]
    assert len(keys) == len(set(keys)), "a seed row has two cases"
    assert sorted(set(keys) ^ set(seed_rows())) == []


def sql_string(value: str | None) -> str:
    if value is None:
        return "cast(null as string)"
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def test_every_seed_row_types_a_real_value(spark, dbt_work_dir):
    mappings = seed_rows()
    typed, shown = [], []
    for number, (family, vendor_type, encoding, value, _, *zone) in enumerate(CASES):
        spark_type, rule = mappings[(family, vendor_type, encoding)]
        zone_sql = json.dumps(sql_string(zone[0])) if zone else "none"
        typed.append(
            f"{{{{ cdc_typed_value({json.dumps(sql_string(value))}, '{rule}', '{spark_type}', {zone_sql}) }}}}"
            f" as case_{number}"
        )
        shown.append(f"{typed_text_sql(f'case_{number}')} as case_{number}")
    (row,) = dbt_show_in_process(spark, dbt_work_dir, f"select {', '.join(shown)} from (select {', '.join(typed)})")
    got = {case[:3]: row[f"case_{number}"] for number, case in enumerate(CASES)}
    expected = {case[:3]: case[4] for case in CASES}
    assert {key: value for key, value in got.items() if value != expected[key]} == {}


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
