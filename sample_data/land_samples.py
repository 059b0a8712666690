"""Lands every file under DIR/<format>/ (default: sample_data) with cdc-land's loader, one topic per
file named <format>.<file name without extension>, in one Spark session.

Each file lands from offset 0, so landing the same files again is a redelivery and adds nothing.
"""

import sys
from pathlib import Path

from python_udfs.formats import SOURCE_FORMATS
from python_udfs.landing import land, read_messages
from python_udfs.session import open_session, profile_spark_settings

SAMPLE_DIR = Path(__file__).resolve().parent


def main(directories: list[str]) -> int:
    spark = open_session(profile_spark_settings())
    for directory in map(Path, directories or [SAMPLE_DIR]):
        for source_format in SOURCE_FORMATS:
            for path in sorted((directory / source_format).glob("*.*")):
                topic = f"{source_format}.{path.stem}"
                result = land(spark, source_format, topic, 0, read_messages([path]), first_offset=0)
                print(f"{path}: {result.landed} landed, {result.redeliveries} already there")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
