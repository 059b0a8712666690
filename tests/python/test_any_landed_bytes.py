"""Whatever bytes land, `dbt build` completes (the shared build asserts it) and each message is accounted for.

Every format's topic `<format>.garbage` holds the same bytes no vendor writes (helpers.garbage_messages):
each becomes a quarantined message with a reason, never an event and never a failed build.
"""

import pytest
from helpers import GARBAGE_TOPIC, garbage_messages, read_table

from cdc_lakehouse.formats import SOURCE_FORMATS


@pytest.mark.parametrize("source_format", SOURCE_FORMATS)
def test_garbage_is_quarantined_with_a_reason(spark, built_warehouse, source_format):
    topic = f"{source_format}.{GARBAGE_TOPIC}"
    quarantined = read_table(spark, built_warehouse, "cdc_quarantine").where(f"topic = '{topic}'").collect()
    assert sorted(row.kafka_offset for row in quarantined) == list(range(len(garbage_messages())))
    assert all(row.reason for row in quarantined)
    assert read_table(spark, built_warehouse, "cdc_events").where(f"topic = '{topic}'").count() == 0
