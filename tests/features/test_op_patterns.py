"""Ingest's per-log access-pattern counts (bronze/op_patterns) against the features stage's Spark pass."""

from __future__ import annotations

import math
import random
import struct

from features.file_features import (
    log_op_patterns,
    op_patterns_of,
    ops_pattern_stats,
    patterns_at_transfer_size,
)
from schemas import BRONZE
from tests.support.frames import interleaved

MONTH = "2024-01"
NAN, INF = float("nan"), float("inf")
STATS = ["op_n", "op_consec", "op_seq", "op_random", "op_first_read", "op_first_write"]


def _op(log, rec, rank, seq, op, off, length, start, source="DXT_POSIX", func=None):
    return {
        "log_id": log,
        "job_month": MONTH,
        "source": source,
        "record_id": rec,
        "rank": rank,
        "seq": seq,
        "op": op,
        "func": func,
        "offset": off,
        "length": length,
        "start_s": start,
        "end_s": None if start is None else start + 0.1,
    }


def _crafted() -> list[dict]:
    """Consecutive, sequential, random and offset-less segments; null, NaN and tied starts; two
    lengths, both DXT sources on one record, Recorder rows (H5F calls among them), a null record."""
    ops = [
        # A/1 POSIX: rank 0 writes 4 consecutive, then one back (random), one ahead (sequential)
        *[_op("A", 1, 0, k, "write", 100 * k, 100, float(k)) for k in range(4)],
        _op("A", 1, 0, 4, "write", 50, 100, 4.0),
        _op("A", 1, 0, 5, "write", 900, 100, 5.0),
        # rank 1 reads, time order against seq order; a null start sorts first, a NaN start last
        _op("A", 1, 1, 0, "read", 300, 100, 3.0),
        _op("A", 1, 1, 1, "read", 200, 100, 2.0),
        _op("A", 1, 1, 2, "read", 0, 100, None),
        _op("A", 1, 1, 3, "read", 400, 100, NAN),
        _op("A", 1, 1, 4, "read", 100, 100, 2.0),  # tied start with seq 1: after it
        # another length on the same record; an offset-less segment (judged, none of the three)
        _op("A", 1, 0, 6, "write", 0, 7, 6.0),
        _op("A", 1, 0, 7, "write", None, 7, 7.0),
        _op("A", 1, 0, 8, "write", 7, 7, 8.0),
        _op("A", 1, 0, 9, "write", 14, 7, 9.0),
        # the same record through MPI-IO
        _op("A", 1, 0, 0, "write", 0, 100, 0.5, "DXT_MPIIO"),
        _op("A", 1, 0, 1, "write", 100, 100, 1.5, "DXT_MPIIO"),
        _op("A", 1, 0, 0, "read", 0, 100, NAN, "DXT_MPIIO"),  # only NaN reads: first read NaN
        # Recorder: no pattern; H5F calls mark the file
        _op("A", 2, 0, 0, "read", 0, 100, 1.0, "RECORDER", "pread"),
        _op("A", 2, 0, 1, "meta", None, None, 1.0, "RECORDER", "H5Fopen"),
        _op("A", 3, 0, 0, "meta", None, None, 1.0, "RECORDER", "H5Fclose"),
        _op(
            "A", None, 0, 2, "meta", None, None, 1.0, "RECORDER", "H5Fcreate"
        ),  # no record: no file
        _op("A", 4, 0, 0, "open", 0, 100, 1.0),
        _op("A", None, 0, 0, "write", 0, 100, 1.0),
        _op("A", 5, 0, 0, "write", 0, None, 1.0),  # no length: never the transfer size
        # B: only null starts (no first write), one rank
        _op("B", 1, 0, 0, "write", 0, 10, None),
        _op("B", 1, 0, 1, "write", 10, 10, None),
        _op("B", 1, 0, 2, "write", 0, 10, -1.0),
    ]
    return ops


def _random_ops(seed: int, logs: int = 12) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(logs):
        for rec in range(rng.randint(1, 3)):
            for rank in range(rng.randint(1, 3)):
                for op in ("read", "write"):
                    off = 0
                    for k in range(rng.randint(0, 30)):
                        length = rng.choice([4096, 4096, 4096, 512])
                        off = rng.choice(
                            [off, off + length, off + 3 * length, max(0, off - 2 * length), None]
                        )
                        start = rng.choice(
                            [rng.uniform(0, 10), round(rng.uniform(0, 3), 0), None, NAN]
                        )
                        src = rng.choice(["DXT_POSIX", "DXT_POSIX", "DXT_MPIIO"])
                        out.append(_op(f"R{seed}-{i}", rec, rank, k, op, off, length, start, src))
                        off = off if off is not None else 0
    return out


def _frame(spark, rows):
    spec = BRONZE["io_ops"]
    return spark.createDataFrame([tuple(r.get(c) for c in spec.columns) for r in rows], spec.struct)


def _key(v):
    """Floats bit for bit (NaN equals NaN only as the same bits); None as None."""
    return struct.pack("<d", v) if isinstance(v, float) else v


def _spark_rows(spark, rows) -> set[tuple]:
    """ops_pattern_stats for every (log, record, source, length) the segments have: one Spark pass per
    combination index, as the stage asks for one (source, transfer size) per file."""
    import pyspark.sql.functions as F
    from pyspark.sql import Window

    ops = _frame(spark, rows)
    combos = (
        ops.where(
            F.col("op").isin("read", "write")
            & F.col("source").startswith("DXT_")
            & F.col("record_id").isNotNull()
            & F.col("length").isNotNull()
        )
        .select("log_id", "record_id", "source", F.col("length").alias("transfer_size"))
        .distinct()
        .withColumn(
            "k",
            F.row_number().over(
                Window.partitionBy("log_id", "record_id").orderBy("source", "transfer_size")
            ),
        )
    )
    out = set()
    for k in range(1, combos.agg(F.max("k")).first()[0] + 1):
        want = combos.where(F.col("k") == k).drop("k")
        got = ops_pattern_stats(ops, want).join(want, ["log_id", "record_id"])
        out |= {
            (r.log_id, r.record_id, r.source, r.transfer_size, *map(_key, (r[c] for c in STATS)))
            for r in got.collect()
        }
    return out


def _ingest_rows(rows) -> tuple[set[tuple], set[tuple]]:
    import pyarrow as pa

    schema = BRONZE["io_ops"].decoded_arrow_schema
    by_log: dict = {}
    for r in rows:
        by_log.setdefault(r["log_id"], []).append({c: r.get(c) for c in schema.names})
    stats, h5 = set(), set()
    for log, rs in by_log.items():
        t = log_op_patterns(pa.Table.from_pylist(rs, schema=schema))
        assert t.schema == BRONZE["op_patterns"].decoded_arrow_schema
        for r in t.to_pylist():
            if r["h5f_calls"]:
                assert r["length"] is None and r["op_n"] is None
                h5.add((log, r["record_id"]))
            else:
                stats.add(
                    (
                        log,
                        r["record_id"],
                        r["source"],
                        r["length"],
                        *map(_key, (r[c] for c in STATS)),
                    )
                )
    return stats, h5


def test_ingest_counts_the_crafted_segments_as_the_spark_pass_does(spark):
    rows = _crafted()
    stats, h5 = _ingest_rows(rows)
    assert stats == _spark_rows(spark, rows)
    assert h5 == {("A", 2), ("A", 3)}
    a = {r[2:4]: r[4:] for r in stats if r[:2] == ("A", 1)}
    # rank 0's 100-byte writes: 5 judged, 3 consecutive, 50 back (random), 900 ahead (sequential);
    # rank 1's reads in time order: 0 (null start), 200, 100 (tied start, later seq), 300, 400 (NaN):
    # 4 judged, 200 sequential, 100 random, 300 sequential, 400 consecutive
    assert a[("DXT_POSIX", 100)][:4] == (5 + 4, 3 + 1, 1 + 2, 1 + 1)
    # 7-byte writes 0, None, 7, 14: the offset-less one is judged but not classed; 7 has no predecessor
    # offset, so is not judged; 14 is consecutive
    assert a[("DXT_POSIX", 7)][:4] == (2, 1, 0, 0)
    assert math.isnan(struct.unpack("<d", a[("DXT_MPIIO", 100)][4])[0])  # only NaN reads


def test_ingest_counts_random_segments_as_the_spark_pass_does(spark):
    rows = _random_ops(7) + _random_ops(8)
    stats, _ = _ingest_rows(rows)
    assert len(stats) > 30
    assert stats == _spark_rows(spark, rows)


def test_the_row_of_the_transfer_size_is_what_the_features_join(spark):
    import pyarrow as pa

    rows = _crafted()
    schema = BRONZE["io_ops"].decoded_arrow_schema
    t = log_op_patterns(
        pa.Table.from_pylist(
            [{c: r.get(c) for c in schema.names} for r in rows if r["log_id"] == "A"], schema=schema
        )
    )
    t = t.add_column(0, "log_id", pa.array(["A"] * t.num_rows)).add_column(
        1, "job_month", pa.array([MONTH] * t.num_rows)
    )
    patterns = spark.createDataFrame(t.to_pandas(), BRONZE["op_patterns"].struct)
    want = spark.createDataFrame(
        [("A", 1, 7, "DXT_POSIX"), ("A", 2, 100, "DXT_POSIX"), ("A", 3, None, "DXT_POSIX")],
        "log_id string, record_id long, transfer_size long, source string",
    )
    got = {r.record_id: r for r in patterns_at_transfer_size(patterns, want).collect()}
    assert set(got) == {1} and got[1].op_n == 2  # record 2 is Recorder only; 3 has no transfer size


def test_no_segments_no_rows():
    import pyarrow as pa

    assert log_op_patterns(None).num_rows == 0
    empty = BRONZE["io_ops"].decoded_arrow_schema.empty_table()
    assert log_op_patterns(empty).schema == BRONZE["op_patterns"].decoded_arrow_schema
    opens = pa.Table.from_pylist(
        [{"source": "DXT_POSIX", "record_id": 1, "rank": 0, "seq": 0, "op": "open"}],
        schema=BRONZE["io_ops"].decoded_arrow_schema,
    )
    assert log_op_patterns(opens).num_rows == 0


def test_many_logs_at_once_are_each_log_counted_alone():
    """Ingest counts a staged file's logs in one call: with the logs' rows interleaved (each log's in its
    order), every log gets exactly the rows `log_op_patterns` gives on its own segments (which the tests
    above hold to the Spark pass), H5F rows included."""
    import numpy as np
    import pyarrow as pa

    rows = _crafted() + _random_ops(7) + _random_ops(8)
    rows += [
        dict(r, log_id=f"{r['log_id']}-twin") for r in rows
    ]  # the same keys in two logs: never merged
    schema = BRONZE["io_ops"].decoded_arrow_schema
    by_log: dict = {}
    for r in rows:
        by_log.setdefault(r["log_id"], []).append({c: r.get(c) for c in schema.names})
    mixed, owner = interleaved(by_log, seed=3)
    names = sorted(by_log)
    got, at = op_patterns_of(
        pa.Table.from_pylist(mixed, schema=schema), np.array([names.index(o) for o in owner])
    )
    assert got.schema == BRONZE["op_patterns"].decoded_arrow_schema and got.num_rows == len(at)
    total = 0
    for k, log in enumerate(names):
        want = log_op_patterns(pa.Table.from_pylist(by_log[log], schema=schema))
        mine = got.filter(pa.array(at == k))
        key = lambda r: tuple(map(_key, r.values()))  # noqa: E731
        assert sorted(map(key, mine.to_pylist()), key=repr) == sorted(
            map(key, want.to_pylist()), key=repr
        ), log
        total += want.num_rows
    assert (
        total == got.num_rows > 50
        and pa.compute.sum(got.column("h5f_calls").cast(pa.int64())).as_py() == 4
    )
