"""Lands DIR/<format>/ (default: sample_data) with cdc-land's loader, in one Spark session: a file is one
topic named <format>.<file name without extension>; a folder is one topic named <format>.<folder>
whose files land in name order (a folder named `orders#2` lands in partition 2 of topic `orders`).

A topic lands from offset 0 at consecutive offsets, so landing the same files again is a redelivery and
adds nothing. A file of a folder named `<name>@<offset>` (`003@15.bin`) lands from that offset instead,
and the files after it follow on: offsets a partition leaves empty (a transactional producer's commit
markers, compaction) are not landed. All messages of a directory land in one Delta MERGE.
"""

import sys
from pathlib import Path

from cdc_lakehouse.formats import SOURCE_FORMATS
from cdc_lakehouse.landing import TopicMessages, land_topics, read_messages
from cdc_lakehouse.session import open_session, profile_spark_settings

SAMPLE_DIR = Path(__file__).resolve().parent


def folder_batches(source_format: str, topic: str, partition: int, files: list[Path]) -> list[TopicMessages]:
    """A folder's files in runs at consecutive offsets: a file named `<name>@<offset>` starts a run there."""
    runs: list[tuple[int, list[bytes]]] = []
    for path in files:
        _, at, offset = path.stem.rpartition("@")
        if not runs or (at and offset.isdigit()):
            runs.append((int(offset) if at and offset.isdigit() else 0, []))
        runs[-1][1].extend(read_messages([path]))
    return [TopicMessages(source_format, topic, partition, first, messages) for first, messages in runs]


def main(directories: list[str]) -> int:
    spark = open_session(profile_spark_settings())
    for directory in map(Path, directories or [SAMPLE_DIR]):
        batches = []
        for source_format in SOURCE_FORMATS:
            for path in sorted((directory / source_format).glob("*")):
                # A folder (one file per binary message) is named like a topic: dots belong to the name.
                name, _, partition = (path.name if path.is_dir() else path.stem).partition("#")
                topic = f"{source_format}.{name}"
                if path.is_dir():
                    batches.extend(folder_batches(source_format, topic, int(partition or 0), sorted(path.iterdir())))
                else:
                    batches.append(TopicMessages(source_format, topic, int(partition or 0), 0, read_messages([path])))
        topics = len({(batch.topic, batch.partition) for batch in batches})
        messages = sum(len(batch.messages) for batch in batches)
        landed = land_topics(spark, batches) if batches else 0
        print(f"{directory}: {topics} topics, {landed} messages landed, {messages - landed} already there")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
