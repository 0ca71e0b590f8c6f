"""Every table's Arrow schema (what delta-rs readers, the report and the fleet page are given)
exists and has the Spark schema's columns, in order, with the types written out by hand here for
the kinds that need a choice."""

import pyarrow as pa
import pytest

from schemas import TABLES


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_has_an_arrow_schema_with_its_columns(name):
    spec = TABLES[name]
    assert spec.arrow_schema.names == [f.name for f in spec.struct.fields]


def test_dates_and_timestamps_map_to_arrow_dates_and_utc_microseconds():
    day = TABLES["fleet_fs_day"].arrow_schema.field("day").type
    stamp = TABLES["fleet_fs_day"].arrow_schema.field("updated_at").type
    assert day == pa.date32()
    assert stamp == pa.timestamp("us", tz="UTC")
