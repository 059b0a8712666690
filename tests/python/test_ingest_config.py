"""cdc-ingest's configuration: topic rules, Kafka client settings, refusals. No Spark, no broker (test_kafka_ingest
runs the command against a real one)."""

import re
from pathlib import Path

import pytest

from cdc_lakehouse.ingest import subscription
from cdc_lakehouse.ingest_config import IngestConfigError, kafka_client_settings, load_config, parse_properties


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ingest.yml"
    path.write_text(text)
    return path


RULES = """
topics:
  - pattern: '.*'
    format: canal_json
  - pattern: 'dts\\..*'
    format: tencent_dts_protobuf
  - topic: dts.legacy
    format: kafkariver_json
source_options:
  maxOffsetsPerTrigger: 1000
  failOnDataLoss: false
"""


def test_a_named_topic_wins_then_the_longest_pattern(tmp_path):
    config = load_config(config_file(tmp_path, RULES))
    assert config.format_of("dts.legacy") == "kafkariver_json"
    assert config.format_of("dts.orders") == "tencent_dts_protobuf"
    assert config.format_of("orders") == "canal_json"
    assert config.source_options == {"maxOffsetsPerTrigger": "1000", "failOnDataLoss": "false"}


def test_a_topic_commits_to_the_consumer_group_of_the_rule_it_follows(tmp_path):
    config = load_config(
        config_file(
            tmp_path,
            """
topics:
  - pattern: 'dts\\..*'
    format: tencent_dts_protobuf
    consumer_group: consumer-grp-subs-shop
  - topic: dts.legacy
    format: kafkariver_json
""",
        )
    )
    assert config.consumer_group_of("dts.orders") == "consumer-grp-subs-shop"
    # The named topic's rule wins, and names no group: its offsets are committed nowhere.
    assert config.consumer_group_of("dts.legacy") is None
    assert config.consumer_group_of("other") is None
    with pytest.raises(IngestConfigError, match="topics entry 1: consumer_group must be a non-empty name"):
        load_config(config_file(tmp_path, "topics: [{topic: a, format: canal_json, consumer_group: ''}]"))


def test_the_subscription_is_the_named_topics_or_one_pattern_of_all_rules(tmp_path):
    config = load_config(config_file(tmp_path, RULES))
    assert subscription(config, []) == {"subscribePattern": "(?:dts\\.legacy)|(?:dts\\..*)|(?:.*)"}
    assert subscription(config, ["dts.a", "b"]) == {"subscribe": "dts.a,b"}
    named = load_config(
        config_file(tmp_path, "topics: [{topic: a, format: canal_json}, {topic: b, format: canal_json}]")
    )
    assert subscription(named, []) == {"subscribe": "a,b"}
    with pytest.raises(IngestConfigError, match="topic 'c' matches no rule"):
        subscription(named, ["a", "c"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("topics: []", "non-empty list `topics`"),
        ("topics: [{topic: a, format: debezium}]", "topics entry 1: unknown format 'debezium'"),
        ("topics: [{topic: a, pattern: b, format: canal_json}]", "expected `format` and one of `topic`, `pattern`"),
        ("topics: [{pattern: '(', format: canal_json}]", "pattern '(' is not a regular expression"),
        ("topics: [{topic: a, format: canal_json}]\nsubscribe: a", "unknown key 'subscribe'"),
        ("topics: [", "not YAML"),
    ],
)
def test_a_configuration_it_cannot_use_is_one_error(tmp_path, text, message):
    with pytest.raises(IngestConfigError, match=re.escape(message)):
        load_config(config_file(tmp_path, text))


@pytest.mark.parametrize(
    ("option", "where_it_is_set"),
    [
        ("kafka.sasl.jaas.config", "Kafka client settings come from CDC_KAFKA_PROPERTIES or CDC_KAFKA_* variables"),
        ("kafka.isolation.level", "Kafka client settings come from CDC_KAFKA_PROPERTIES or CDC_KAFKA_* variables"),
        ("subscribePattern", "the topics come from the topics list (or --topic)"),
        ("assign", "the topics come from the topics list (or --topic)"),
        # Spark reads its options case-insensitively: `startingoffsets` would replace --starting-offsets too.
        ("startingoffsets", "where a new checkpoint starts is --starting-offsets"),
        ("startingOffsetsByTimestamp", "where a new checkpoint starts is --starting-offsets"),
        ("startingTimestamp", "where a new checkpoint starts is --starting-offsets"),
        ("includeHeaders", "cdc-ingest always lands the headers"),
    ],
)
def test_a_source_option_cdc_ingest_sets_itself_is_refused_in_one_line(tmp_path, option, where_it_is_set):
    path = config_file(tmp_path, f"topics: [{{topic: a, format: canal_json}}]\nsource_options: {{{option}: x}}")
    with pytest.raises(IngestConfigError) as refused:
        load_config(path)
    assert str(refused.value) == f"{path}: source option {option!r} is not set here: {where_it_is_set}"


def test_client_settings_come_from_the_properties_file_and_variables_win(tmp_path):
    properties = tmp_path / "client.properties"
    properties.write_text(
        "# console download\n! another comment\nbootstrap.servers = a:9092,b:9092\nsecurity.protocol:SASL_SSL\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="u" \\\n    password="p";\n'
    )
    settings = kafka_client_settings(
        {"CDC_KAFKA_PROPERTIES": str(properties), "CDC_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "PATH": "/bin"}
    )
    assert settings == {
        "bootstrap.servers": "a:9092,b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        + 'username="u" password="p";',
        "sasl.mechanism": "SCRAM-SHA-512",
        "isolation.level": "read_committed",
    }


def test_committed_records_only_unless_the_environment_says_otherwise():
    servers = {"CDC_KAFKA_BOOTSTRAP_SERVERS": "a:9092"}
    assert kafka_client_settings(servers)["isolation.level"] == "read_committed"
    uncommitted = kafka_client_settings({**servers, "CDC_KAFKA_ISOLATION_LEVEL": "read_uncommitted"})
    assert uncommitted["isolation.level"] == "read_uncommitted"


def test_no_servers_is_one_error():
    with pytest.raises(IngestConfigError, match="no Kafka servers"):
        kafka_client_settings({})


def test_properties_lines_without_separator_and_blank_values():
    assert parse_properties("a\nb=\nc = d=e\n") == {"a": "", "b": "", "c": "d=e"}
