"""What cdc-ingest reads: the topic rules of its YAML file, and the Kafka client settings of the environment.

The file is part of the deployment and may sit in version control, so it holds no Kafka client setting:
those (servers, SASL credentials) come from CDC_KAFKA_PROPERTIES, a Kafka client.properties file, and
from CDC_KAFKA_<NAME> variables (CDC_KAFKA_SASL_JAAS_CONFIG is sasl.jaas.config), which win. Unless one of
them says otherwise, isolation.level is read_committed.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cdc_lakehouse.formats import SOURCE_FORMATS

KAFKA_PROPERTIES_VARIABLE = "CDC_KAFKA_PROPERTIES"
KAFKA_VARIABLE_PREFIX = "CDC_KAFKA_"


class IngestConfigError(Exception):
    """A configuration cdc-ingest cannot start with: reported on one line, nothing is read."""


@dataclass(frozen=True)
class TopicRule:
    """Topics that land as one format: one topic by name, or every topic a pattern matches whole."""

    source_format: str
    topic: str | None = None
    pattern: str | None = None
    # The consumer group ingest commits the landed offsets of these topics to, for the vendor's console.
    consumer_group: str | None = None

    @property
    def regex(self) -> str:
        return re.escape(self.topic) if self.topic is not None else self.pattern

    def matches(self, topic: str) -> bool:
        # Java and Python agree on the patterns a topic rule needs (classes, alternation, quantifiers).
        return re.fullmatch(self.regex, topic) is not None

    @property
    def precedence(self) -> tuple[int, int]:
        """A named topic before any pattern, then the longest pattern, as the cdc_sources seed does."""
        return (0, 0) if self.topic is not None else (1, -len(self.pattern))


@dataclass(frozen=True)
class IngestConfig:
    rules: tuple[TopicRule, ...]
    # Spark Kafka source options (maxOffsetsPerTrigger, failOnDataLoss, ...); never kafka.* settings.
    source_options: Mapping[str, str] = field(default_factory=dict)

    def rule_of(self, topic: str) -> TopicRule | None:
        """The rule a topic follows: the first by precedence that matches it."""
        matching = sorted((rule for rule in self.rules if rule.matches(topic)), key=lambda rule: rule.precedence)
        return matching[0] if matching else None

    def format_of(self, topic: str) -> str | None:
        rule = self.rule_of(topic)
        return rule.source_format if rule else None

    def consumer_group_of(self, topic: str) -> str | None:
        rule = self.rule_of(topic)
        return rule.consumer_group if rule else None

    def ordered_rules(self) -> list[TopicRule]:
        return sorted(self.rules, key=lambda rule: rule.precedence)


def load_config(path: Path) -> IngestConfig:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise IngestConfigError(f"{path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise IngestConfigError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(document, dict) or not isinstance(document.get("topics"), list) or not document["topics"]:
        raise IngestConfigError(f"{path}: expected a mapping with a non-empty list `topics`")
    unknown = set(document) - {"topics", "source_options"}
    if unknown:
        raise IngestConfigError(f"{path}: unknown key {sorted(unknown)[0]!r}; expected topics, source_options")
    rules = tuple(_rule(path, number, entry) for number, entry in enumerate(document["topics"], start=1))
    options = document.get("source_options") or {}
    if not isinstance(options, dict):
        raise IngestConfigError(f"{path}: source_options must be a mapping")
    for name in options:
        where_it_is_set = _set_elsewhere(str(name))
        if where_it_is_set:
            raise IngestConfigError(f"{path}: source option {name!r} is not set here: {where_it_is_set}")
    return IngestConfig(rules, {str(k): _option_text(v) for k, v in options.items()})


def _set_elsewhere(option: str) -> str | None:
    """Where a Spark Kafka source option that cdc-ingest sets itself comes from; None for any other option.
    Spark reads the options case-insensitively, and a later one would silently replace cdc-ingest's."""
    name = option.lower()
    if name.startswith("kafka."):
        return f"Kafka client settings come from {KAFKA_PROPERTIES_VARIABLE} or CDC_KAFKA_* variables"
    if name.startswith("subscribe") or name == "assign":
        return "the topics come from the topics list (or --topic)"
    if name.startswith("startingoffsets") or name == "startingtimestamp":
        return "where a new checkpoint starts is --starting-offsets"
    if name == "includeheaders":
        return "cdc-ingest always lands the headers"
    return None


def _rule(path: Path, number: int, entry: object) -> TopicRule:
    where = f"{path}: topics entry {number}"
    keys = set(entry) - {"consumer_group"} if isinstance(entry, dict) else None
    if keys not in ({"topic", "format"}, {"pattern", "format"}):
        raise IngestConfigError(f"{where}: expected `format` and one of `topic`, `pattern` (and `consumer_group`)")
    group = entry.get("consumer_group")
    if group is not None and (not isinstance(group, str) or not group.strip()):
        raise IngestConfigError(f"{where}: consumer_group must be a non-empty name")
    source_format = entry["format"]
    if source_format not in SOURCE_FORMATS:
        raise IngestConfigError(
            f"{where}: unknown format {source_format!r}; expected one of: {', '.join(SOURCE_FORMATS)}"
        )
    if "topic" in entry:
        if not isinstance(entry["topic"], str) or not entry["topic"].strip():
            raise IngestConfigError(f"{where}: topic must be a non-empty name")
        return TopicRule(source_format, topic=entry["topic"], consumer_group=group)
    try:
        re.compile(entry["pattern"])
    except (re.error, TypeError) as exc:
        raise IngestConfigError(f"{where}: pattern {entry['pattern']!r} is not a regular expression ({exc})") from None
    return TopicRule(source_format, pattern=entry["pattern"], consumer_group=group)


def _option_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def kafka_client_settings(environment: Mapping[str, str]) -> dict[str, str]:
    """Kafka client settings (without Spark's `kafka.` prefix): the properties file, then the variables."""
    settings: dict[str, str] = {}
    properties_file = environment.get(KAFKA_PROPERTIES_VARIABLE)
    if properties_file:
        try:
            settings.update(parse_properties(Path(properties_file).read_text(encoding="utf-8")))
        except OSError as exc:
            raise IngestConfigError(f"{KAFKA_PROPERTIES_VARIABLE}: {properties_file}: {exc.strerror}") from None
    for variable, value in environment.items():
        if variable.startswith(KAFKA_VARIABLE_PREFIX) and variable != KAFKA_PROPERTIES_VARIABLE:
            settings[variable.removeprefix(KAFKA_VARIABLE_PREFIX).lower().replace("_", ".")] = value
    # Records of aborted transactions, and of transactions still open, are never landed; the Kafka client's
    # own default, read_uncommitted, would land them (CDC_KAFKA_ISOLATION_LEVEL=read_uncommitted restores it).
    settings.setdefault("isolation.level", "read_committed")
    if not settings.get("bootstrap.servers"):
        raise IngestConfigError(
            f"no Kafka servers: set CDC_KAFKA_BOOTSTRAP_SERVERS or bootstrap.servers in {KAFKA_PROPERTIES_VARIABLE}"
        )
    return settings


def parse_properties(text: str) -> dict[str, str]:
    """A Java .properties text as Kafka clients read it: `key=value` or `key: value`, `#` and `!` comments,
    a line ending in a backslash continued on the next. Escapes other than the line continuation are kept."""
    properties: dict[str, str] = {}
    logical = ""
    for line in text.splitlines():
        stripped = line.strip() if not logical else line.lstrip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            logical += stripped[:-1]
            continue
        logical += stripped
        key, value = _split(logical)
        properties[key] = value
        logical = ""
    return properties


def _split(line: str) -> tuple[str, str]:
    match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)", line)
    return (match.group(1), match.group(2)) if match else (line, "")
