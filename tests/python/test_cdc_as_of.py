"""cdc_as_of(relation, ts): a history as it was at a point in time. Versions and expected keys are written
by hand: a version is valid from valid_from (included) to valid_to (excluded); a delete opens a version
that hides its key; a version without valid_from (a full load's row) is valid from the beginning, and one
without valid_to that is not current (only untimed versions followed it) at no time."""

import json

import pytest
from helpers import dbt_show_in_process

VERSIONS = """
    select * from values
        ('["1"]', 'placed', timestamp'2026-03-02 08:00:00', timestamp'2026-03-02 09:00:00', false, false),
        ('["1"]', 'paid', timestamp'2026-03-02 09:00:00', timestamp'2026-03-02 10:00:00', false, false),
        ('["1"]', 'paid', timestamp'2026-03-02 10:00:00', null, true, true),
        ('["2"]', 'placed', timestamp'2026-03-02 08:30:00', null, false, true),
        ('["3"]', 'loaded', null, timestamp'2026-03-02 09:30:00', false, false),
        ('["3"]', 'updated', timestamp'2026-03-02 09:30:00', null, false, true),
        ('["4"]', 'loaded', null, null, false, false),
        ('["4"]', 'loaded again', null, null, false, true)
        as versions (pk, status, valid_from, valid_to, is_deleted, is_current)
"""

LOADED = [('["3"]', "loaded"), ('["4"]', "loaded again")]
UPDATED = [('["3"]', "updated"), ('["4"]', "loaded again")]
CASES = [
    # (ts, the keys and their status at ts)
    ("2026-03-02 07:59:59", LOADED),
    ("2026-03-02 08:00:00", [('["1"]', "placed"), *LOADED]),
    ("2026-03-02 08:59:59.999999", [('["1"]', "placed"), ('["2"]', "placed"), *LOADED]),
    ("2026-03-02 09:00:00", [('["1"]', "paid"), ('["2"]', "placed"), *LOADED]),
    ("2026-03-02 09:30:00", [('["1"]', "paid"), ('["2"]', "placed"), *UPDATED]),
    ("2026-03-02 10:00:00", [('["2"]', "placed"), *UPDATED]),
    ("2027-01-01 00:00:00", [('["2"]', "placed"), *UPDATED]),
]


def test_the_history_as_it_was_at_each_point_in_time(spark, dbt_work_dir):
    relation = json.dumps(f"({VERSIONS})")
    sql = " union all ".join(
        f"select '{ts}' as at, pk, status from {{{{ cdc_as_of({relation}, \"timestamp'{ts}'\") }}}} as state"
        for ts, _ in CASES
    )
    rows = dbt_show_in_process(spark, dbt_work_dir, sql + " order by at, pk")
    for ts, expected in CASES:
        assert [(row["pk"], row["status"]) for row in rows if row["at"] == ts] == expected, ts


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
