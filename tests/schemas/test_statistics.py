"""Which columns Delta keeps per-file statistics for (decision 0049): a wide table keeps them for
the columns a read skips files by (its keys, log_id first), not for its first 32 columns, which
for a Darshan module's table are counters that every snapshot open would parse for every file."""

import pytest

from iolake.lake.files import stats_columns
from schemas import TABLES

WIDE = 30  # columns besides the partition column: Delta's default 32 would be mostly values


def _width(spec) -> int:
    return len([c for c in spec.columns if c not in spec.partition_by])


WIDE_TABLES = sorted(n for n, s in TABLES.items() if _width(s) >= WIDE)


def test_the_wide_tables_are_the_counter_and_feature_tables():
    assert {"posix", "mpiio", "stdio", "h5d", "file_rollups", "file_features"} <= set(WIDE_TABLES)


@pytest.mark.parametrize("name", WIDE_TABLES)
def test_a_wide_table_keeps_statistics_of_its_keys_only(name):
    spec = TABLES[name]
    cols = stats_columns(spec)
    assert cols and cols[0] == "log_id", cols  # a job's reads skip files by log_id
    assert set(cols) <= set(spec.keys) | set(spec.zorder_columns), cols
    assert set(spec.zorder_columns) <= set(cols)  # OPTIMIZE ZORDER BY needs their statistics
    assert len(cols) < 32 and all(c in spec.columns for c in cols)
