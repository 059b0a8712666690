"""The metrics' semantics without Spark (cdc_lakehouse/metrics.py): what a textfile carries from one one-shot
run to the next, labels that stay bounded and quoted, and the monitoring files naming only metrics that exist.
Their values in a real run are test_operating's (make test-kafka) and test_monitoring's (make test-deploy)."""

import json
import re
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from cdc_lakehouse.metrics import MAX_REASON_CLASSES, Metrics
from cdc_lakehouse.pipeline_state import TableProgress, reason_class

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"


def one_shot_run(
    textfile: Path, landed: int, end_offset: int | None, succeeded: bool, versions: int, table: str = "orders"
) -> dict:
    """What a one-shot run (cdc-run --once) does with its metrics: carry the file over, record, write it; a
    run whose ingest read nothing (end_offset None) records no offsets."""
    metrics = Metrics()
    metrics.add_ingest(kafka=None)
    metrics.add_runs("cdc")
    metrics.textfile = textfile
    metrics.carry_over(textfile)
    metrics.record_landed({"canal_json": landed})
    if end_offset is not None:
        metrics.record_offsets({("shop", 0): 100}, {("shop", 0): end_offset})
        metrics.record_batch_landed()
    progress = TableProgress("canal_json", "canal", "shop", None, table, 1_800_000_000.0, versions, 1)
    metrics.record_tables([progress], 1_800_000_060.0, added=True)
    metrics.record_run({"ingest": 2.0, "change_log": 5.0}, succeeded, batch_id=7, current=succeeded)
    metrics.publish()
    return samples(textfile.read_text())


def samples(text: str) -> dict:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_a_one_shot_runs_counters_go_on_from_the_file_and_its_in_a_row_gauges_count_runs(tmp_path):
    textfile = tmp_path / "cdc.prom"
    one_shot_run(textfile, landed=10, end_offset=103, succeeded=False, versions=4)
    one_shot_run(textfile, landed=5, end_offset=104, succeeded=False, versions=2)
    third = one_shot_run(textfile, landed=1, end_offset=105, succeeded=True, versions=1)
    table = (
        ("source_database", "shop"),
        ("source_format", "canal_json"),
        ("source_name", "canal"),
        ("source_schema", ""),
        ("source_table", "orders"),
    )
    assert third[("cdc_landed_messages_total", (("source_format", "canal_json"),))] == 16
    assert third[("cdc_runs_total", (("outcome", "failed"),))] == 2
    assert third[("cdc_runs_total", (("outcome", "succeeded"),))] == 1
    assert third[("cdc_source_table_versions_total", table)] == 7
    assert third[("cdc_source_table_lag_seconds", table)] == 60
    # Two failed runs counted, then reset by one that succeeded.
    assert third[("cdc_runs_failed_in_a_row", ())] == 0
    # The backlog at the runs' ends: 3, 4, 5: it grew at the end of the second and the third.
    partition = (("partition", "0"), ("topic", "shop"))
    assert third[("cdc_kafka_partition_backlog_messages", partition)] == 5
    assert third[("cdc_kafka_partition_backlog_growing_batches", partition)] == 2
    assert third[("cdc_change_log_batch_id", ())] == 7


def test_failed_runs_in_a_row_and_a_change_log_that_did_not_finish(tmp_path):
    textfile = tmp_path / "cdc.prom"
    one_shot_run(textfile, landed=1, end_offset=100, succeeded=True, versions=1)
    finished = samples(textfile.read_text())[("cdc_change_log_finished_timestamp_seconds", ())]
    one_shot_run(textfile, landed=1, end_offset=100, succeeded=False, versions=1)
    second = one_shot_run(textfile, landed=1, end_offset=100, succeeded=False, versions=1)
    assert second[("cdc_runs_failed_in_a_row", ())] == 2
    # A run whose change log failed does not move when the change log was last current.
    assert second[("cdc_change_log_finished_timestamp_seconds", ())] == finished


def test_a_runs_lag_replaces_the_last_and_offsets_stay_when_a_run_read_none(tmp_path):
    textfile = tmp_path / "cdc.prom"
    one_shot_run(textfile, landed=1, end_offset=103, succeeded=True, versions=1, table="orders")
    second = one_shot_run(textfile, landed=0, end_offset=None, succeeded=True, versions=1, table="items")
    lagging = {dict(labels)["source_table"] for name, labels in second if name == "cdc_source_table_lag_seconds"}
    assert lagging == {"items"}
    newest = {dict(labels)["source_table"] for name, labels in second if "newest_event" in name}
    assert newest == {"orders", "items"}
    partition = (("partition", "0"), ("topic", "shop"))
    assert second[("cdc_kafka_partition_landed_offset", partition)] == 100
    assert second[("cdc_kafka_partition_backlog_messages", partition)] == 3


def test_a_textfile_of_other_labels_or_no_format_is_not_carried_and_stops_nothing(tmp_path, capsys):
    textfile = tmp_path / "cdc.prom"
    textfile.write_text('# TYPE cdc_runs_total counter\ncdc_runs_total{result="ok"} 5\n')
    run = one_shot_run(textfile, landed=1, end_offset=100, succeeded=True, versions=1)
    assert run[("cdc_runs_total", (("outcome", "succeeded"),))] == 1
    assert "cdc_runs not carried over" in capsys.readouterr().err
    textfile.write_text("{{{ not prometheus\n")
    run = one_shot_run(textfile, landed=1, end_offset=100, succeeded=True, versions=1)
    assert run[("cdc_runs_total", (("outcome", "succeeded"),))] == 1


def test_labels_are_quoted_and_reasons_bounded(tmp_path):
    metrics = Metrics()
    metrics.add_runs("cdc")
    metrics.textfile = tmp_path / "cdc.prom"
    odd = TableProgress("canal_json", 'a "name"', "shop\nx", None, "ta\\ble", 1.0, 1, 1)
    metrics.record_tables([odd], 2.0, added=True)
    metrics.record_quarantined({("canal_json", f"reason {n}th kind"): 1 for n in range(MAX_REASON_CLASSES + 5)})
    metrics.publish()
    written = samples(metrics.textfile.read_text())
    tables = [labels for name, labels in written if name == "cdc_source_table_versions_total"]
    assert dict(tables[0])["source_name"] == 'a "name"' and dict(tables[0])["source_database"] == "shop\nx"
    reasons = {dict(labels)["reason"] for name, labels in written if name == "cdc_quarantined_messages_total"}
    assert len(reasons) == MAX_REASON_CLASSES + 1 and "other" in reasons
    # The next one-shot run knows the file's reasons: a new one is still `other`.
    again = Metrics()
    again.add_runs("cdc")
    again.carry_over(metrics.textfile)
    again.record_quarantined({("canal_json", "a new kind"): 1})
    other = {"source_format": "canal_json", "reason": "other"}
    assert again.registry.get_sample_value("cdc_quarantined_messages_total", other) == 6


def test_a_reason_class_drops_what_a_message_put_in_it():
    assert reason_class("binlog position not offset@file.number: mysql-bin.000010@5") == (
        "binlog position not offset@file.number"
    )
    assert reason_class("bytes are not a Tencent DTS Entries message (protobuf decode failed)") == (
        "bytes are not a Tencent DTS Entries message"
    )
    assert reason_class("column 12 of 40 is missing") == "column N of N is missing"
    assert reason_class("x" * 500) == "x" * 80
    assert reason_class("") == "unknown"


def defined_metrics() -> set[str]:
    """Every series name the metrics expose, with their suffixes."""
    metrics = Metrics()
    metrics.add_ingest(kafka=None)
    metrics.add_runs("cdc")
    names = set()
    for family in metrics.registry.collect():
        names.add(family.name)
        names.add(family.name + "_total")
    return names


def queries(node) -> list[str]:
    """Every `expr` and `query` of a Grafana dashboard (panels' targets, template variables)."""
    if isinstance(node, dict):
        found = [value for key, value in node.items() if key in ("expr", "query") and isinstance(value, str)]
        return found + [text for value in node.values() for text in queries(value)]
    return [text for value in node for text in queries(value)] if isinstance(node, list) else []


def test_the_dashboard_and_the_alert_rules_name_only_metrics_that_exist():
    dashboard = json.loads((MONITORING / "grafana" / "cdc_lakehouse.json").read_text())
    rules = yaml.safe_load((MONITORING / "prometheus" / "cdc_lakehouse.rules.yml").read_text())
    expressions = [rule["expr"] for group in rules["groups"] for rule in group["rules"]] + queries(dashboard)
    named = set(re.findall(r"\bcdc_[a-z_]+\b", "\n".join(expressions)))
    assert named, "no metric named"
    assert named <= defined_metrics(), sorted(named - defined_metrics())
    alerts = {rule["alert"] for group in rules["groups"] for rule in group["rules"] if "alert" in rule}
    assert {"CdcSourceTableLagging", "CdcKafkaBacklogGrowing", "CdcQuarantineRate", "CdcRunsFailing"} <= alerts
    assert "CdcChangeLogStale" in alerts


def test_an_orchestrators_tasks_write_a_textfile_per_command_where_the_environment_says(tmp_path):
    """CDC_METRICS_TEXTFILE_DIR in the scheduler's environment: cdc-ingest, then cdc-build, each its own file
    (node_exporter refuses a series two files hold); --metrics-textfile wins; neither, no metrics."""
    from argparse import Namespace

    from cdc_lakehouse.metrics import metrics_for

    environment = {"CDC_METRICS_TEXTFILE_DIR": str(tmp_path)}
    ingest = metrics_for(Namespace(metrics_textfile=None), "cdc-ingest", environment=environment)
    build = metrics_for(Namespace(metrics_textfile=None), "cdc-build", schema="cdc", environment=environment)
    chosen = metrics_for(Namespace(metrics_textfile=tmp_path / "mine.prom"), "cdc-build", environment=environment)
    assert (ingest.textfile, build.textfile, chosen.textfile) == (
        tmp_path / "cdc-ingest.prom",
        tmp_path / "cdc-build.prom",
        tmp_path / "mine.prom",
    )
    assert metrics_for(Namespace(metrics_textfile=None), "cdc-build", schema="cdc", environment={}) is None
