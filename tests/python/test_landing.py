"""cdc-land: argument and file errors, offsets, redeliveries, all-or-nothing writes."""

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import PROJECT_DIR, VENV_BIN, Warehouse, assert_succeeded
from pyspark.sql import Row

from cdc_lakehouse.landing import land, main, read_messages
from cdc_lakehouse.landing_table import LANDING_TABLE


def landed(spark, topic: str) -> list[tuple[int, int, bytes]]:
    rows = spark.sql(
        f"select kafka_partition, kafka_offset, value from {LANDING_TABLE} where topic = '{topic}' "
        "order by kafka_partition, kafka_offset"
    ).collect()
    return [(r.kafka_partition, r.kafka_offset, bytes(r.value)) for r in rows]


@pytest.fixture
def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "messages.jsonl"
    path.write_bytes(b'{"n":1}\r\n\n   \n{"n":2}\n{"n":3}')
    return path


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--format", "debezium_json", "--topic", "t"], "unknown format 'debezium_json'; expected one of: "),
        (["--format", "canal_json", "--topic", "t", "--partition", "-1"], "must not be negative: -1"),
        (["--format", "canal_json", "--topic", "t", "--offset", "ten"], "not a whole number: 'ten'"),
        (["--format", "canal_json"], "the following arguments are required: --topic"),
        (["--format", "canal_json", "--topic", " "], "--topic must not be empty"),
    ],
)
def test_wrong_arguments_get_one_line_and_exit_2(arguments, message, text_file, capsys):
    assert main([*arguments, str(text_file)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert error.startswith("cdc-land: error: ")
    assert message in error


def test_missing_file_is_an_error(tmp_path, capsys):
    assert main(["--format", "canal_json", "--topic", "t", str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err == f"cdc-land: error: {tmp_path / 'nope.json'}: no such file\n"


@pytest.mark.parametrize(("name", "content"), [("empty.bin", b""), ("empty.json", b""), ("blank.json", b"\n  \r\n")])
def test_file_without_messages_is_an_error(tmp_path, name, content, capsys):
    path = tmp_path / name
    path.write_bytes(content)
    assert main(["--format", "canal_json", "--topic", "t", str(path)]) == 2
    assert capsys.readouterr().err == f"cdc-land: error: {path}: file holds no message\n"


def test_one_bad_file_means_nothing_is_written(spark, tmp_path, text_file, capsys):
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    topic = "all-or-nothing"
    assert main(["--format", "canal_json", "--topic", topic, str(text_file), str(empty)]) == 2
    assert landed(spark, topic) == []


def test_text_files_hold_one_message_per_non_blank_line_and_bin_files_one_message(tmp_path, text_file):
    binary = tmp_path / "envelope.bin"
    binary.write_bytes(b"\x0a\x00\n\xff\n")
    assert read_messages([text_file, binary]) == [b'{"n":1}', b'{"n":2}', b'{"n":3}', b"\x0a\x00\n\xff\n"]


def test_offsets_continue_per_topic_and_partition(spark):
    topic = "offsets-continue"
    first = land(spark, "canal_json", topic, 0, [b"a", b"b", b"c"])
    second = land(spark, "canal_json", topic, 0, [b"d", b"e"])
    other_partition = land(spark, "canal_json", topic, 1, [b"x"])
    assert (first.first_offset, first.last_offset, second.first_offset, second.last_offset) == (0, 2, 3, 4)
    assert (other_partition.first_offset, other_partition.last_offset) == (0, 0)
    assert landed(spark, topic) == [(0, 0, b"a"), (0, 1, b"b"), (0, 2, b"c"), (0, 3, b"d"), (0, 4, b"e"), (1, 0, b"x")]


def test_explicit_first_offset(spark):
    topic = "explicit-offset"
    result = land(spark, "canal_json", topic, 2, [b"a", b"b"], first_offset=10)
    assert (result.first_offset, result.last_offset, result.landed) == (10, 11, 2)
    assert landed(spark, topic) == [(2, 10, b"a"), (2, 11, b"b")]


def test_redelivered_offsets_are_skipped_and_the_first_delivery_kept(spark):
    topic = "redelivery"
    land(spark, "canal_json", topic, 0, [b"a", b"b"])
    again = land(spark, "canal_json", topic, 0, [b"a2", b"b2", b"c"], first_offset=0)
    assert (again.landed, again.redeliveries) == (1, 2)
    assert landed(spark, topic) == [(0, 0, b"a"), (0, 1, b"b"), (0, 2, b"c")]
    rows = spark.sql(f"select count(distinct ingested_at) as batches from {LANDING_TABLE} where topic = '{topic}'")
    assert rows.first().batches == 2


# Two cdc-land processes (about 60 s): make test-slow, which keeps make test under its 12 minutes; the
# in-process tests above cover what it lands.
@pytest.mark.slow
def test_cdc_land_command_lands_into_the_embedded_warehouse(tmp_path, text_file):
    warehouse = Warehouse(tmp_path / "warehouse")
    first = warehouse.land("--format", "kafkariver_json", "--topic", "orders", str(text_file))
    assert_succeeded(first)
    assert first.stdout.strip() == (
        "cdc-land: 3 messages landed in landing.cdc_raw (topic orders, partition 0, offsets 0..2; "
        "0 redeliveries skipped)"
    )
    again = warehouse.land("--format", "kafkariver_json", "--topic", "orders", "--offset", "1", str(text_file))
    assert_succeeded(again)
    assert again.stdout.strip() == (
        "cdc-land: 1 messages landed in landing.cdc_raw (topic orders, partition 0, offsets 1..3; "
        "2 redeliveries skipped)"
    )


@pytest.mark.slow
def test_the_environment_names_the_landing_schema_for_cdc_land_and_dbt_alike(spark, tmp_path, text_file):
    warehouse = Warehouse(tmp_path / "warehouse")
    env = {**warehouse.env, "CDC_LANDING_SCHEMA": "landing_elsewhere"}
    command = [str(VENV_BIN / "cdc-land"), "--format", "kafkariver_json", "--topic", "orders", str(text_file)]
    landed_elsewhere = subprocess.run(command, cwd=PROJECT_DIR, env=env, capture_output=True, text=True, check=False)
    assert_succeeded(landed_elsewhere)
    assert "3 messages landed in landing_elsewhere.cdc_raw" in landed_elsewhere.stdout
    offsets = spark.read.format("delta").load(warehouse.table_path("landing_elsewhere", "cdc_raw"))
    assert sorted(row.kafka_offset for row in offsets.collect()) == [0, 1, 2]
    # dbt reads the same table: its source and the batch machinery's landing name it.
    compiled = subprocess.run(
        [
            str(VENV_BIN / "dbt"),
            "compile",
            "--quiet",
            "--inline",
            "select * from {{ source('landing', 'cdc_raw') }} where '{{ cdc_landing_schema() }}' is not null",
        ],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert_succeeded(compiled)
    assert "from landing_elsewhere.cdc_raw where 'landing_elsewhere' is not null" in compiled.stdout


def test_a_landing_table_of_an_earlier_release_gains_the_new_columns_in_place(spark):
    from cdc_lakehouse.landing_table import LANDING_COLUMNS, ensure_landing_table

    schema = "landing_of_an_earlier_release"
    spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(
        f"CREATE TABLE {schema}.cdc_raw (source_format string, topic string, kafka_partition int, kafka_offset bigint,"
        " kafka_key binary, value binary, kafka_timestamp timestamp, ingested_at timestamp) USING delta"
        " TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql(f"INSERT INTO {schema}.cdc_raw VALUES ('canal_json', 't', 0, 0, null, X'61', null, current_timestamp())")
    table = ensure_landing_table(spark, schema)
    assert [(f.name, f.dataType.simpleString()) for f in spark.table(table).schema] == [
        (name, sql_type.replace(" ", "")) for name, sql_type in LANDING_COLUMNS
    ]
    spark.sql(
        f"INSERT INTO {table} VALUES ('canal_json', 't', 0, 1, null, X'62', null, current_timestamp(),"
        " array(named_struct('key', 'trace', 'value', X'01')), 'CreateTime')"
    )
    # A model reads the landing commits it has not read through the change data feed, across the change.
    changes = spark.sql(
        f"SELECT kafka_offset, kafka_headers, kafka_timestamp_type FROM table_changes('{table}', 1)"
        " WHERE _change_type = 'insert' ORDER BY kafka_offset"
    ).collect()
    assert [(r.kafka_offset, r.kafka_headers, r.kafka_timestamp_type) for r in changes] == [
        (0, None, None),
        (1, [Row(key="trace", value=bytearray(b"\x01"))], "CreateTime"),
    ]
    spark.sql(f"DROP SCHEMA {schema} CASCADE")


def test_landing_writers_at_once_each_land_again_after_a_conflict_and_every_message_lands_once(spark):
    topic = "writers-at-once"
    land(spark, "canal_json", topic, 0, [b"seed"])
    messages = [bytes([n]) for n in range(40)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(
                lambda first: land(spark, "canal_json", topic, 0, messages[first : first + 20], first_offset=first + 1),
                [0, 10, 20, 0],
            )
        )
    assert sum(result.landed for result in results) == 40
    assert landed(spark, topic) == [(0, 0, b"seed"), *((0, n + 1, bytes([n])) for n in range(40))]
