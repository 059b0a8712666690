"""A deployment reads only the formats it enables (var cdc_enabled_formats): the other formats' models leave
the DAG, and their landed messages stay in landing, neither events nor quarantined nor counted as lost."""

import pytest
from conftest import VENDOR_EXAMPLES, dbt_in_process, in_process_schema

# Many dbt runs on one warehouse: make test-slow, beside make test in CI.
pytestmark = pytest.mark.slow

SCHEMA = "enabled_formats_test"
ONLY_CANAL = {"cdc_enabled_formats": ["canal_json"]}
CANAL_TOPIC = "canal_json.enabled"
DTS_TOPIC = "tencent_dts_protobuf.enabled"


@pytest.fixture(scope="module")
def canal_only(spark, tmp_path_factory):
    from cdc_lakehouse.landing import land

    work_dir = tmp_path_factory.mktemp("enabled_formats_dbt")
    with in_process_schema(spark, SCHEMA):
        # Insert, delete, re-insert after a Canal restart, and a copy of the re-insert (written by hand).
        canal = (VENDOR_EXAMPLES / "canal_json" / "stream_shop_c.jsonl").read_bytes().splitlines()
        land(spark, "canal_json", CANAL_TOPIC, 0, canal)
        land(spark, "tencent_dts_protobuf", DTS_TOPIC, 0, [b"not even an Envelope"])
        listing = ("ls", "--resource-type", "model", "--output", "name")
        listed = dbt_in_process(spark, work_dir, *listing, dbt_vars=ONLY_CANAL)
        # The build runs every test, the reconciliation of landed messages included.
        dbt_in_process(spark, work_dir, "build", dbt_vars=ONLY_CANAL)
        yield set(listed.result)


def test_only_the_enabled_formats_models_are_in_the_dag(canal_only):
    assert {"stg_canal_json__messages", "int_canal_json__events", "cdc_events", "cdc_history"} <= canal_only
    assert not {name for name in canal_only if "dts" in name or "drs" in name or "aliyun" in name or "river" in name}


def test_the_enabled_format_is_read_and_the_other_left_in_landing(spark, canal_only):
    events = spark.sql(f"select topic, kafka_offset, op from {SCHEMA}.cdc_events order by kafka_offset").collect()
    assert [tuple(event) for event in events] == [(CANAL_TOPIC, 0, "c"), (CANAL_TOPIC, 1, "d"), (CANAL_TOPIC, 2, "c")]
    redeliveries = spark.sql(f"select topic, kafka_offset from {SCHEMA}.cdc_redeliveries").collect()
    assert [tuple(row) for row in redeliveries] == [(CANAL_TOPIC, 3)]
    assert spark.sql(f"select * from {SCHEMA}.cdc_quarantine").count() == 0
    assert spark.sql(f"select * from landing.cdc_raw where topic = '{DTS_TOPIC}'").count() == 1
