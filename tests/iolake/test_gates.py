"""The one-pass gate check counts what Great Expectations counts, rule by rule.

`gates.validate` decides a Spark frame with `unexpected_counts` and calls Great Expectations
only when a rule is broken, so the two must agree on every rule kind: on clean frames, on
frames breaking each rule, and on nulls (ignored by every rule except not_null, and by a
compound key only when all its columns are null).
"""

from __future__ import annotations

import dataclasses

import pytest
from pyspark.sql import types as T

from iolake import gates
from iolake.lake import GateFailed
from schemas import BRONZE, Expectation

SCHEMA = T.StructType(
    [
        T.StructField("k", T.StringType()),
        T.StructField("r", T.LongType()),
        T.StructField("kind", T.StringType()),
        T.StructField("x", T.DoubleType()),
    ]
)
RULES = (
    Expectation("not_null", "k"),
    Expectation("unique", "k"),
    Expectation("compound_unique", ("k", "r")),
    Expectation("in_set", "kind", {"values": ["read", "write"]}),
    Expectation("between", "x", {"min": 0}),
    Expectation("between", "r", {"min": -1, "max": 10}),
)
SPEC = dataclasses.replace(BRONZE["jobs"], name="gate_probe", expectations=RULES)

CLEAN = [("a", 1, "read", 0.0), ("b", 2, "write", 3.5), ("c", -1, None, None)]
FRAMES = {
    "clean": CLEAN,
    "null_key": CLEAN + [(None, 3, "read", 1.0)],
    "two_null_keys": CLEAN + [(None, 3, "read", 1.0), (None, 3, "write", 2.0)],
    "duplicate_key": CLEAN + [("a", 4, "read", 1.0)],
    "duplicate_pair": CLEAN + [("a", 1, "write", 1.0), ("a", 1, "read", 2.0)],
    "all_null_pairs": CLEAN + [(None, None, "read", 1.0), (None, None, "read", 1.0)],
    "outside_set": CLEAN + [("d", 5, "erase", 1.0), ("e", 6, "READ", 1.0)],
    "below_min": CLEAN + [("d", 5, "read", -0.5)],
    "range": CLEAN + [("d", 11, "read", 1.0), ("e", -2, "read", 1.0)],
}


def _ge_counts(spec, df) -> list[int]:
    res = gates.great_expectations_result(spec, df)
    by_rule = []
    for e in spec.expectations:  # GE keeps the suite's order
        hits = [
            r
            for r in res.results
            if r.expectation_config.kwargs.get(
                "column", r.expectation_config.kwargs.get("column_list")
            )
            in (e.column, list(e.column) if isinstance(e.column, tuple) else None)
            and r.expectation_config.type.endswith(_GE_SUFFIX[e.kind])
        ]
        assert len(hits) == 1, (e, [r.expectation_config for r in res.results])
        by_rule.append(int((hits[0].result or {}).get("unexpected_count") or 0))
    return by_rule


_GE_SUFFIX = {
    "not_null": "values_to_not_be_null",
    "unique": "column_values_to_be_unique",
    "compound_unique": "compound_columns_to_be_unique",
    "in_set": "values_to_be_in_set",
    "between": "values_to_be_between",
}


@pytest.mark.parametrize("frame", sorted(FRAMES))
def test_one_pass_counts_equal_great_expectations(spark, frame):
    df = spark.createDataFrame(FRAMES[frame], SCHEMA)
    ours = [n for _, n in gates.unexpected_counts(SPEC, df)]
    assert ours == _ge_counts(SPEC, df)
    if frame != "clean":
        assert any(ours), "each broken frame must break at least one rule"


def test_gate_report_comes_from_great_expectations(spark):
    df = spark.createDataFrame(FRAMES["outside_set"], SCHEMA)
    with pytest.raises(GateFailed) as e:
        gates.validate(SPEC, df, sample_rows=5)
    msg = str(e.value)
    assert "expect_column_values_to_be_in_set" in msg and "2 offending rows" in msg
    assert "erase" in msg and "READ" in msg


def test_real_table_specs_pass_clean_rows_and_catch_a_duplicate(spark):
    """The ledger's suite on rows of its own schema: clean passes, a repeated log_id fails."""
    logs = BRONZE["logs"]
    loose = T.StructType([T.StructField(f.name, f.dataType, True) for f in logs.struct.fields])
    row = {f.name: None for f in logs.struct.fields}
    row.update(log_id="x1", status="ok", source_uri="/a", size_bytes=1, kind="darshan")
    df = spark.createDataFrame([row, {**row, "log_id": "x2"}], loose)
    assert all(n == 0 for _, n in gates.unexpected_counts(logs, df))
    gates.validate(logs, df)
    dup = spark.createDataFrame([row, row], loose)
    assert dict((e.kind, n) for e, n in gates.unexpected_counts(logs, dup))["unique"] == 2
    with pytest.raises(GateFailed, match="to_be_unique"):
        gates.validate(logs, dup)
