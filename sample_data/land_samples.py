"""Lands DIR/<format>/ (default: sample_data) with cdc-land's loader, in one Spark session: a file is one
topic named <format>.<file name without extension>; a folder is one topic named <format>.<folder>
whose files land in name order (a folder named `orders#2` lands in partition 2 of topic `orders`).

Each file lands from offset 0, so landing the same files again is a redelivery and adds nothing. All
messages of a directory land in one Delta MERGE.
"""

import sys
from pathlib import Path

from python_udfs.formats import SOURCE_FORMATS
from python_udfs.landing import TopicMessages, land_topics, read_messages
from python_udfs.session import open_session, profile_spark_settings

SAMPLE_DIR = Path(__file__).resolve().parent


def main(directories: list[str]) -> int:
    spark = open_session(profile_spark_settings())
    for directory in map(Path, directories or [SAMPLE_DIR]):
        batches = []
        for source_format in SOURCE_FORMATS:
            for path in sorted((directory / source_format).glob("*")):
                files = sorted(path.iterdir()) if path.is_dir() else [path]
                name, _, partition = path.stem.partition("#")
                topic = f"{source_format}.{name}"
                batches.append(TopicMessages(source_format, topic, int(partition or 0), 0, read_messages(files)))
        messages = sum(len(batch.messages) for batch in batches)
        landed = land_topics(spark, batches) if batches else 0
        print(f"{directory}: {len(batches)} topics, {landed} messages landed, {messages - landed} already there")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
