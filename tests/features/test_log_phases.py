"""Ingest's per-log I/O phases (`log_phases`, numpy over a log's Arrow io_ops) against the tags stage's Spark
`traced_phases`: the same rows bit for bit, on crafted odd timestamps and on random logs."""

from __future__ import annotations

import math
import random
import struct
from functools import reduce

import numpy as np
import pyarrow as pa
import pyspark.sql.functions as F
import pytest

from features.bottleneck_tags import log_phases, phases_of, traced_phases
from schemas import BRONZE
from tests.support.frames import interleaved

MONTH = "2024-01"
GAPS = (0.0, 0.5, 1.0, 3.0)
NAN, INF = math.nan, math.inf


def _op(log, seq, op, start, end, length=1):
    return {
        "log_id": log,
        "job_month": MONTH,
        "source": "DXT_POSIX",
        "record_id": 1,
        "rank": 0,
        "seq": seq,
        "op": op,
        "offset": 0,
        "length": length,
        "start_s": start,
        "end_s": end,
    }


def _ops(log, *ops):
    """(op, start, end, length) tuples as one log's io_ops rows, in this order."""
    return [_op(log, k, *o) for k, o in enumerate(ops)]


CRAFTED = [
    # NaN start (stays: not null) and a NaN end (every later running end is NaN: no more splits)
    *_ops(
        "nan_start",
        ("write", 0.0, 1.0, 1),
        ("read", NAN, 2.0, 2),
        ("write", 5.0, 6.0, 4),
        ("read", NAN, NAN, 8),
    ),
    *_ops(
        "nan_end",
        ("write", 0.0, 1.0, 1),
        ("write", 2.0, NAN, 2),
        ("read", 9.0, 9.5, 4),
        ("write", 20.0, 21.0, 8),
    ),
    # null start (dropped), null end (ends at its start), null length (0 bytes)
    *_ops(
        "nulls",
        ("write", None, 1.0, 100),
        ("write", 0.0, None, 1),
        ("read", 4.0, 5.0, None),
        ("read", 4.2, None, 2),
        ("write", 9.0, 8.0, None),
    ),
    # infinite and huge starts and ends (inf - inf is NaN: no split), negative ones
    *_ops(
        "inf",
        ("write", -5.0, -4.0, 1),
        ("write", -1.0, INF, 2),
        ("read", INF, INF, 4),
        ("read", 1e308, 1e308, 8),
        ("write", -INF, -3.0, 16),
        ("write", 3.0, 2.0, 32),
    ),
    *_ops(
        "neg_inf",
        ("read", -INF, -INF, 1),
        ("read", -INF, 0.0, 2),
        ("write", 10.0, 11.0, 4),
        ("write", INF, 5.0, 8),
    ),
    *_ops(
        "negative",
        ("read", -7.25, -7.0, 1),
        ("read", -3.0, -2.5, 2),
        ("write", -1.0, 0.5, 4),
        ("write", 4.0, 3.0, 8),
    ),
    # ends before starts; only reads and writes count
    *_ops(
        "reversed",
        ("write", 3.0, 1.0, 1),
        ("read", 0.0, 2.5, 2),
        ("write", 7.0, -1.0, 4),
        ("open", 3.5, 6.5, 8),
        ("meta", 4.0, 6.9, 16),
        ("read", 8.0, 7.0, 32),
    ),
    *_ops("no_rw", ("open", 0.0, 1.0, 1), ("meta", 2.0, 3.0, 2), ("close", 5.0, 6.0, 4)),
    # signed zeros: -0.0 groups with 0.0; min and max keep the first of them seen
    *_ops(
        "zeros",
        ("write", -0.0, -0.0, 1),
        ("write", 0.0, 0.0, 2),
        ("read", 2.0, 3.0, 4),
        ("write", -5.0, -4.0, 8),
    ),
    *_ops("zeros_end", ("write", 0.0, -0.0, 1), ("write", -0.0, 0.0, 2), ("read", -5.0, -4.0, 4)),
    *_ops(
        "zeros_rev",
        ("write", 0.0, 0.0, 1),
        ("write", -0.0, -0.0, 2),
        ("read", -0.25, -0.0, 4),
        ("read", -0.1, 0.0, 8),
    ),
    *_ops("neg_zero", ("read", -0.0, 1.0, 1), ("read", 5.0, 6.0, 2), ("read", -0.2, -0.0, 4)),
    # many ops, signed zeros in the first phase: its bounds are the first zeros in the log's order
    *_ops(
        "zeros_many",
        *[
            ("write", s, e, k)
            for k, (s, e) in enumerate(
                (
                    lambda rnd: [
                        (z, rnd.choice([-0.0, 0.0, None]))
                        if rnd.random() < 0.3
                        else (z + 10 + rnd.randrange(400) / 8, None)
                        for z in [rnd.choice([0.0, -0.0]) for _ in range(3000)]
                    ]
                )(random.Random(5))
            )
        ],
    ),
    # idle gaps of exactly 0.5, 1.0 and 3.0 s (binary fractions: no rounding), not over those thresholds, and
    # just over them; several ops per bin
    *_ops(
        "exact",
        *[
            ("write" if k % 2 else "read", s, e, k + 1)
            for k, (s, e) in enumerate(
                [
                    (0.0, 0.125),
                    (0.0625, 0.25),
                    (0.75, 1.0),
                    (1.5, 1.625),
                    (2.625, 3.0),
                    (6.0, 6.25),
                    (9.25, 9.375),
                    (9.3125, 9.25),
                    (9.375, 10.0),
                    (10.5, 10.75),
                    (11.875, 12.0),
                    (15.0, 15.25),
                    (18.25, 18.5),
                    (22.0, 22.5),
                ]
            )
        ],
    ),
    # many phases, listed out of time order
    *_ops(
        "many",
        *[("write", 2.0 * k + 0.125 * (k % 3), 2.0 * k + 0.5, k) for k in reversed(range(40))],
    ),
]


def _frame(spark, rows):
    spec = BRONZE["io_ops"]
    return spark.createDataFrame([tuple(r.get(c) for c in spec.columns) for r in rows], spec.struct)


def _per_log(rows) -> dict:
    """Each log's io_ops as ingest holds it: an Arrow table of the decoded columns, rows in their order."""
    schema = BRONZE["io_ops"].decoded_arrow_schema
    logs: dict = {}
    for r in rows:
        logs.setdefault(r["log_id"], []).append({c: r.get(c) for c in schema.names})
    return {log: pa.Table.from_pylist(ops, schema=schema) for log, ops in logs.items()}


def _bits(x):
    """A double as its bits (-0.0 is not 0.0), any NaN as one value (Spark and numpy may differ in the payload)."""
    return (
        "NaN" if x is not None and math.isnan(x) else (None if x is None else struct.pack(">d", x))
    )


def _row(phase, t0, t1, nbytes) -> tuple:
    return phase, _bits(t0), _bits(t1), nbytes


def _spark_phases(spark, rows, gaps) -> dict:
    """{(gap, log): [phase rows in phase order]} from `traced_phases`, one Spark action for every gap."""
    df = _frame(spark, rows)
    out = reduce(
        lambda a, b: a.unionByName(b),
        [traced_phases(df, g).withColumn("gap", F.lit(g)) for g in gaps],
    ).collect()
    got: dict = {}
    for r in sorted(out, key=lambda r: (r.gap, r.log_id, r.phase)):
        assert r.job_month == MONTH
        got.setdefault((r.gap, r.log_id), []).append(_row(r.phase, r.t0, r.t1, r["bytes"]))
    return got


def _arrow_phases(rows, gaps) -> dict:
    got: dict = {}
    for log, table in _per_log(rows).items():
        for g in gaps:
            t = log_phases(table, g)
            assert t.schema == pa.schema(
                [
                    ("phase", pa.int64()),
                    ("t0", pa.float64()),
                    ("t1", pa.float64()),
                    ("bytes", pa.int64()),
                ]
            )
            if t.num_rows:
                got[(g, log)] = [_row(*r.values()) for r in t.to_pylist()]
    return got


def _assert_same(spark, rows, gaps=GAPS):
    want, got = _spark_phases(spark, rows, gaps), _arrow_phases(rows, gaps)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == want[k], k
    return want


def test_log_phases_equal_spark_on_odd_timestamps(spark):
    want = _assert_same(spark, CRAFTED)
    logs = {log for _, log in want}
    assert "no_rw" not in logs and len(logs) == len({r["log_id"] for r in CRAFTED}) - 1
    # the cases do what they say (the Spark side, worked out by hand)
    assert want[(1.0, "exact")] == [
        _row(1, 0.0, 3.0, 15),
        _row(2, 6.0, 6.25, 6),
        _row(3, 9.25, 10.75, 34),
        _row(4, 11.875, 12.0, 11),
        _row(5, 15.0, 15.25, 12),
        _row(6, 18.25, 18.5, 13),
        _row(7, 22.0, 22.5, 14),
    ]
    assert want[(3.0, "exact")] == [_row(1, 0.0, 18.5, 91), _row(2, 22.0, 22.5, 14)]
    assert [len(want[(g, "exact")]) for g in GAPS] == [11, 8, 7, 2]
    assert len(want[(0.5, "many")]) == 40 and len(want[(3.0, "many")]) == 1
    # a NaN start or running end: start - end is NaN, which Spark compares as over any gap
    assert want[(1.0, "nan_end")] == [
        _row(1, 0.0, NAN, 3),
        _row(2, 9.0, 9.5, 4),
        _row(3, 20.0, 21.0, 8),
    ]
    assert want[(3.0, "nan_start")] == [
        _row(1, 0.0, 1.0, 1),
        _row(2, 5.0, 6.0, 4),
        _row(3, NAN, NAN, 10),
    ]
    assert want[(0.0, "inf")] == [
        _row(1, -INF, -3.0, 17),
        _row(2, -1.0, INF, 42),
        _row(3, INF, INF, 4),
    ]
    assert want[(1.0, "nulls")] == [
        _row(1, 0.0, 0.0, 1),
        _row(2, 4.0, 5.0, 2),
        _row(3, 9.0, 9.0, 0),
    ]
    # -0.0 and 0.0 tie: min and max keep the first seen (in a bin, the ops' order; in a phase, time order), greatest
    # the end
    assert want[(1.0, "zeros")][1:] == [_row(2, -0.0, -0.0, 3), _row(3, 2.0, 3.0, 4)]
    assert want[(1.0, "zeros_end")][1:] == [_row(2, 0.0, -0.0, 3)]
    assert want[(0.0, "zeros_rev")] == [_row(1, -0.25, -0.0, 15)]
    assert want[(1.0, "zeros_rev")] == [_row(1, -0.25, 0.0, 15)]
    assert want[(1.0, "zeros_many")][0][1:3] == (_bits(-0.0), _bits(-0.0))


def test_log_phases_of_no_ops():
    schema = BRONZE["io_ops"].decoded_arrow_schema
    for t in (
        None,
        schema.empty_table(),
        pa.Table.from_pylist(
            [{c: r.get(c) for c in schema.names} for r in _ops("x", ("write", None, 1.0, 1))],
            schema,
        ),
    ):
        out = log_phases(t, 1.0)
        assert out.num_rows == 0 and out.schema.names == ["phase", "t0", "t1", "bytes"]


def _random_rows(seed=7, n_logs=20) -> list[dict]:
    rnd = random.Random(seed)

    def t():
        r = rnd.random()
        if r < 0.03:
            return rnd.choice([None, NAN, INF, -INF, -0.0, 0.0])
        if r < 0.5:  # on a quarter-second grid: idle gaps exactly at the thresholds
            return rnd.randrange(-8, 160) / 4
        return rnd.uniform(-2, 40)

    rows = []
    for i in range(n_logs):
        n = rnd.randrange(0, 120)
        ops = []
        for _ in range(n):
            s = t()
            e = (
                rnd.choice([None, NAN, s - 1 if s is not None else None, t()])
                if rnd.random() < 0.1
                else (None if s is None else s + rnd.choice([0.0, 0.25, 0.5, rnd.expovariate(2.0)]))
            )
            op = rnd.choices(["read", "write", "open", "meta"], [5, 5, 1, 1])[0]
            ops.append((op, s, e, rnd.choice([None, 0, 1, 4096, rnd.randrange(1 << 40)])))
        rows += _ops(f"r{i}", *ops)
    return rows


def test_log_phases_equal_spark_on_random_logs(spark):
    want = _assert_same(spark, _random_rows())
    assert len({log for _, log in want}) >= 15 and max(len(v) for v in want.values()) > 10


@pytest.mark.parametrize("gap", [0.0, 1.0])
def test_log_phases_ignore_the_order_of_the_ops(gap):
    """Shuffled, a log's ops give the same phases (the signed zeros aside, which keep the first seen)."""
    rows = [r for r in _random_rows(seed=3, n_logs=4) if r["start_s"] != 0 and r["end_s"] != 0]
    for log, table in _per_log(rows).items():
        idx = list(range(table.num_rows))
        random.Random(1).shuffle(idx)
        a, b = log_phases(table, gap), log_phases(table.take(idx), gap)
        assert [_row(*r.values()) for r in a.to_pylist()] == [
            _row(*r.values()) for r in b.to_pylist()
        ], log


def _interleaved(rows, seed):
    """`rows` with the logs' rows interleaved at random, each log's own rows kept in their order."""
    out, owner = interleaved({log: t.to_pylist() for log, t in _per_log(rows).items()}, seed)
    return pa.Table.from_pylist(out, schema=BRONZE["io_ops"].decoded_arrow_schema), owner


@pytest.mark.parametrize("gap", GAPS)
def test_phases_of_many_logs_are_each_log_phased_alone(gap):
    """Ingest phases a staged file's logs in one call: with the logs' rows interleaved, each log still gets
    exactly the rows `log_phases` gives on its own ops (which the tests above hold to Spark's)."""
    rows = CRAFTED + _random_rows(seed=11, n_logs=30)
    stack, owner = _interleaved(rows, seed=int(gap * 4))
    names = sorted(set(owner))
    code = np.array([names.index(o) for o in owner])
    got, at = phases_of(stack, gap, code)
    assert got.num_rows == len(at)
    per_log = {log: log_phases(t, gap) for log, t in _per_log(rows).items()}
    assert sum(t.num_rows for t in per_log.values()) == got.num_rows > 100
    for k, log in enumerate(names):
        mine = [_row(*r.values()) for r in got.filter(pa.array(at == k)).to_pylist()]
        assert mine == [_row(*r.values()) for r in per_log[log].to_pylist()], log
