"""covering stage: per-op intervals from DXT and Recorder, counters otherwise; covers on real logs
(the IOR sweep against pydarshan); exactly-once re-runs."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from features.covering_sets import intervals, iominer_greedy, minimum_cover, untraced_items
from iolake.config import load_config
from iolake.lake import read_or_empty, read_table, table_version
from jobs import covering
from schemas import BRONZE, SILVER
from tests.support.covering import dxt_union_s, union
from tests.support.data import shared_path

SPEC = SILVER["covering_sets"]
MONTH = "2024-01"


def _df(spark, table: str, rows: list[dict]):
    """A bronze frame of `table`'s schema; columns a row leaves out are null."""
    spec = BRONZE[table]
    full = [{"job_month": MONTH, **r} for r in rows]
    return spark.createDataFrame([tuple(r.get(c) for c in spec.columns) for r in full], spec.struct)


def _op(log, record_id, rank, seq, op, start, end, source="DXT_POSIX"):
    return {
        "log_id": log,
        "source": source,
        "record_id": record_id,
        "rank": rank,
        "seq": seq,
        "op": op,
        "start_s": start,
        "end_s": end,
    }


def _ts(module: str, log, record_id, rank, read=(0.0, 0.0), write=(0.0, 0.0)):
    p = module.upper()
    return {
        "log_id": log,
        "record_id": record_id,
        "rank": rank,
        f"{p}_F_READ_START_TIMESTAMP": read[0],
        f"{p}_F_READ_END_TIMESTAMP": read[1],
        f"{p}_F_WRITE_START_TIMESTAMP": write[0],
        f"{p}_F_WRITE_END_TIMESTAMP": write[1],
    }


def _times(module: str, log, record_id, rank, read=0.0, write=0.0, meta=0.0, **more):
    """A counter row with its read, write and metadata seconds (and any other counters)."""
    p = module.upper()
    return {
        "log_id": log,
        "record_id": record_id,
        "rank": rank,
        f"{p}_F_READ_TIME": read,
        f"{p}_F_WRITE_TIME": write,
        f"{p}_F_META_TIME": meta,
        **more,
    }


def _heat(log, rank, width, read, write, record_id=900, module="POSIX"):
    return {
        "log_id": log,
        "record_id": record_id,
        "module": module,
        "rank": rank,
        "bin_width_s": width,
        "nbins": len(read),
        "read_bytes": read,
        "write_bytes": write,
    }


@pytest.fixture(scope="module")
def bronze(spark):
    """Tiny logs: A DXT with a counters-only shared file, B counters only, C Recorder, D no I/O,
    E DXT data file inside an untraced STDIO span (IOR's ior.json), F metadata timestamps only,
    K counters and HEATMAP (tests/features/test_covering_sets.py `_heatmap_log`, derived by hand)."""
    io_ops = _df(
        spark,
        "io_ops",
        [
            # log A: IOMiner's counter-example as (rank, file) items, one of them from two ops
            _op("A", 1, 0, 0, "write", 0.0, 4.0),
            _op("A", 1, 0, 1, "write", 3.0, 10.0),
            _op("A", 2, 1, 0, "read", 0.5, 11.5),
            _op("A", 3, 0, 0, "write", 9.0, 19.0),
            _op("A", 3, 0, 0, "read", 9.5, 12.0, "DXT_MPIIO"),
            # log C: Recorder calls; only reads and writes count
            _op("C", 9, 0, 0, "open", 0.0, 0.5, "RECORDER"),
            _op("C", 9, 0, 1, "read", 1.0, 2.0, "RECORDER"),
            _op("C", None, 0, 2, "meta", 0.0, 9.0, "RECORDER"),
            # log E: rank 0's two ops on the data file leave a gap [2, 3]; rank 1's op spans it
            _op("E", 20, 0, 0, "write", 1.0, 2.0),
            _op("E", 20, 0, 1, "write", 3.0, 4.0),
            _op("E", 20, 1, 0, "write", 1.5, 4.5),
        ],
    )
    posix = _df(
        spark,
        "posix",
        [
            _ts(
                "posix", "A", 1, 0, write=(0.0, 30.0)
            ),  # the file has DXT ops: these counters are not used
            _ts("posix", "A", 4, -1, read=(20.0, 25.0)),  # shared, no DXT
            _ts("posix", "B", 5, 0, write=(2.0, 6.0)),
            _ts("posix", "B", 8, 0),  # opened, never read or written
            _ts("posix", "C", 9, 0, read=(1.0, 2.5)),  # Recorder's roll-up of the traced file
            _ts("posix", "D", 10, 0),
            _ts("posix", "E", 20, 0, write=(1.0, 4.0)),
            _ts("posix", "E", 20, 1, write=(1.5, 4.5)),
            # log K: spans [0.5, 5.5], [4.5, 5.75] and a shared [1.5, 4.2] (slowest rank 1)
            {
                **_ts("posix", "K", 60, 0, read=(0.5, 5.5)),
                **_times("posix", "K", 60, 0, 0.6, 0.2, 9.0),
            },
            {
                **_ts("posix", "K", 61, 1, write=(4.5, 5.75)),
                **_times("posix", "K", 61, 1, 0.0, 1.1),
            },
            {
                **_ts("posix", "K", 62, -1, read=(1.5, 4.2)),
                **_times(
                    "posix",
                    "K",
                    62,
                    -1,
                    9.0,
                    9.0,
                    0.5,
                    POSIX_SLOWEST_RANK=1,
                    POSIX_F_SLOWEST_RANK_TIME=2.0,
                ),
            },
            # log F: opened, stat'ed and closed over [0, 50] without a read or write
            {
                **_ts("posix", "F", 30, 0),
                "POSIX_F_OPEN_START_TIMESTAMP": 0.5,
                "POSIX_F_OPEN_END_TIMESTAMP": 0.6,
                "POSIX_F_CLOSE_START_TIMESTAMP": 49.0,
                "POSIX_F_CLOSE_END_TIMESTAMP": 50.0,
                "POSIX_F_META_TIME": 0.3,
            },
        ],
    )
    mpiio = _df(spark, "mpiio", [_ts("mpiio", "B", 5, 0, read=(1.5, 6.5))])
    stdio = _df(
        spark,
        "stdio",
        [
            _ts("stdio", "B", 6, 0, read=(3.0, 4.0)),
            _ts("stdio", "B", 7, 0, write=(0.1, 99.0)),
            _ts("stdio", "E", 21, 0, write=(0.5, 5.0)),  # ior.json: header at 0.5, summary at 5
            {
                **_ts("stdio", "K", 63, 0, write=(1.2, 1.7)),
                **_times("stdio", "K", 63, 0, 0.0, 0.25),
            },
            {
                **_ts("stdio", "F", 31, 0),
                "STDIO_F_OPEN_START_TIMESTAMP": 1.0,
                "STDIO_F_CLOSE_END_TIMESTAMP": 60.0,
            },
        ],
    )
    files = _df(
        spark,
        "files",
        [
            {"log_id": "B", "record_id": 7, "name": "<STDOUT>"},
            {"log_id": "B", "record_id": 6, "name": "/in.txt"},
        ],
    )
    heatmap = _df(
        spark,
        "heatmap",
        [
            # K: rank 0 at 1 s bins, bytes in [1, 2] and [4, 5]; rank 1 coarsened to 2 s, in [4, 6]
            _heat("K", 0, 1.0, [0, 5, 0, 0, 0, 0], [0, 0, 0, 0, 7, 0]),
            _heat("K", 1, 2.0, [0, 0, 0], [0, 0, 3]),
            # A has DXT: its HEATMAP does not bound anything
            _heat("A", 0, 1.0, [1, 0], [0, 0]),
        ],
    )
    return {
        "io_ops": io_ops,
        "posix": posix,
        "mpiio": mpiio,
        "stdio": stdio,
        "files": files,
        "heatmap": heatmap,
    }


def _spans(bronze: dict) -> dict:
    """The inputs of `intervals` and `untraced_items` (the spans before HEATMAP bins cut them)."""
    return {t: df for t, df in bronze.items() if t != "heatmap"}


def test_intervals_are_the_ops_of_a_traced_log_else_counters_merged_over_modules(spark, bronze):
    got = sorted(
        (r.log_id, r.record_id, r.rank, r.start_s, r.end_s, r.interval_source)
        for r in intervals(**_spans(bronze)).collect()
    )
    assert got == sorted(
        [
            # A has DXT ops: one row per read/write op (MPI-IO's read folds into record 3); the shared
            # file 4 has only counters and is left out, and so are file 1's counters
            ("A", 1, 0, 0.0, 4.0, "dxt"),
            ("A", 1, 0, 3.0, 10.0, "dxt"),
            ("A", 2, 1, 0.5, 11.5, "dxt"),
            ("A", 3, 0, 9.0, 19.0, "dxt"),
            ("A", 3, 0, 9.5, 12.0, "dxt"),
            # B has no ops: POSIX and MPI-IO timestamps of record 5 merge; <STDOUT> (7) is not storage
            ("B", 5, 0, 1.5, 6.5, "counters"),
            ("B", 6, 0, 3.0, 4.0, "counters"),
            # C: Recorder's read only (not its open or metadata calls)
            ("C", 9, 0, 1.0, 2.0, "recorder"),
            # E: the data file's ops; ior.json (21) is STDIO, which DXT does not trace
            ("E", 20, 0, 1.0, 2.0, "dxt"),
            ("E", 20, 0, 3.0, 4.0, "dxt"),
            ("E", 20, 1, 1.5, 4.5, "dxt"),
            # K: its spans, before the HEATMAP bins cut them
            ("K", 60, 0, 0.5, 5.5, "counters"),
            ("K", 61, 1, 4.5, 5.75, "counters"),
            ("K", 62, -1, 1.5, 4.2, "counters"),
            ("K", 63, 0, 1.2, 1.7, "counters"),
            # D and F: no read or write timestamp (F's open, close and metadata stamps make none)
        ]
    )


def test_untraced_items_count_the_counter_items_a_traced_log_leaves_out(spark, bronze):
    got = {r.log_id: r.n_untraced_items for r in untraced_items(**_spans(bronze)).collect()}
    assert got == {"A": 1, "E": 1}


def _transform(bronze: dict):
    """The stage's pure transform, given bronze frames by short name (as pipeline.yaml names them)."""
    return covering.transform({f"bronze/{t}": df for t, df in bronze.items()}, None)[
        "silver/covering_sets"
    ]


def test_transform_keeps_the_minimum_cover_with_shares(spark, bronze):
    from pyspark.testing import assertDataFrameEqual, assertSchemaEqual

    out = _transform(bronze)
    assertSchemaEqual(out.schema, SPEC.struct)
    expected = spark.createDataFrame(
        [
            # A: items (1, 0) = [0, 4] u [3, 10], (2, 1) = [0.5, 11.5], (3, 0) = [9, 19]: A and C suffice
            ("A", MONTH, 0, 1, 0.0, 10.0, 10.0, "dxt", 3, 19.0, 2, True, 1, "dxt", True, 19.0),
            ("A", MONTH, 0, 3, 9.0, 19.0, 9.0, "dxt", 3, 19.0, 2, True, 1, "dxt", True, 19.0),
            # B: no read or write time in its counters: the lower bound is 0
            (
                "B",
                MONTH,
                0,
                5,
                1.5,
                6.5,
                5.0,
                "counters",
                2,
                5.0,
                1,
                True,
                0,
                "counters",
                False,
                0.0,
            ),
            (
                "C",
                MONTH,
                0,
                9,
                1.0,
                2.0,
                1.0,
                "recorder",
                1,
                1.0,
                1,
                True,
                0,
                "recorder",
                True,
                1.0,
            ),
            # E: ior.json's span [0.5, 5] no longer swallows the data file; pure I/O time is the ops'
            # union [1, 4.5]; rank 0 alone covers [1, 1.5] and rank 1 alone [4, 4.5]
            ("E", MONTH, 0, 20, 1.0, 4.0, 2.0, "dxt", 2, 3.5, 2, True, 1, "dxt", True, 3.5),
            ("E", MONTH, 1, 20, 1.5, 4.5, 1.5, "dxt", 2, 3.5, 2, True, 1, "dxt", True, 3.5),
            # K: the spans cut to U = [1, 2] u [4, 6] leave [1, 2] u [4, 5.75]: at most 2.75 s (5.25
            # s from the spans whole), at least 2.6 s (rank 1: 1.1 s + the shared file's 2.0 - 0.5)
            (
                "K",
                MONTH,
                0,
                60,
                1.0,
                5.5,
                2.5,
                "counters",
                4,
                2.75,
                2,
                True,
                0,
                "heatmap",
                False,
                2.6,
            ),
            (
                "K",
                MONTH,
                1,
                61,
                4.5,
                5.75,
                0.25,
                "counters",
                4,
                2.75,
                2,
                True,
                0,
                "heatmap",
                False,
                2.6,
            ),
        ],
        SPEC.struct,
    )
    assertDataFrameEqual(out, expected)


def test_transform_without_files_keeps_standard_streams(spark, bronze):
    out = _transform({t: bronze[t] for t in ("io_ops", "posix", "mpiio", "stdio")})
    b = out.where("log_id = 'B'").collect()
    assert [(r.record_id, r.end_s) for r in b] == [(7, 99.0)]


def test_transform_of_empty_bronze_is_empty(spark):
    empty = {
        t: spark.createDataFrame([], BRONZE[t].struct)
        for t in ("io_ops", "posix", "mpiio", "stdio", "files", "heatmap")
    }
    assert _transform(empty).count() == 0


# -- the oracle: IOMiner's covering set by brute force -----------------------------------------


def _brute_force_members(items, budget: int = 200_000) -> int | None:
    """The size of the smallest subset of (rank, file) members whose op intervals together equal
    the union of every op (the covering set), by trying every subset of members in order of size;
    None past `budget` subsets. Unions are compared as sets, not only by measure, so an isolated
    zero-length op (a component of its own) must be covered too."""
    whole = union([iv for ivs in items for iv in ivs])
    tried = 0
    for k in range(1, len(items) + 1):
        for combo in itertools.combinations(items, k):
            if union([iv for ivs in combo for iv in ivs]) == whole:
                return k
            tried += 1
            if tried >= budget:
                return None
    raise AssertionError("the set of all members covers the union")


def _brute_force_minimum(ivs, budget: int = 200_000) -> int | None:
    """The same with one interval per member."""
    return _brute_force_members([[iv] for iv in ivs], budget)


def _small_cases():
    """IOMiner's counter-example, nested / touching / duplicate / zero-length items, and seeded
    random sets of up to 9 items on a coarse grid (so ties and shared ends are common)."""
    yield [
        (0.0, 10.0),
        (0.5, 11.5),
        (9.0, 19.0),
    ]  # IOMiner's greedy takes all three; A and C suffice
    yield [(0.0, 4.0), (4.0, 8.0), (2.0, 6.0)]  # touching items join: 2
    yield [(0.0, 10.0), (2.0, 3.0), (2.0, 3.0), (0.0, 10.0)]  # nested and duplicates: 1
    yield [(0.0, 1.0), (5.0, 5.0), (0.5, 1.0)]  # an isolated zero-length item is a component: 2
    yield [(1.0, 2.0), (0.0, 3.0), (2.0, 5.0), (3.0, 6.0), (4.0, 7.0), (6.0, 9.0)]
    rng = random.Random(20190520)
    for _ in range(300):
        n = rng.randint(1, 9)
        ivs = []
        for _ in range(n):
            a = rng.randint(0, 20) / 2
            ivs.append((a, a + rng.choice([0, 0.5, 1, 1.5, 2, 3, 5, 8])))
        yield ivs


def test_minimum_cover_matches_brute_force_on_small_cases():
    sizes = []
    for ivs in _small_cases():
        members, pure = minimum_cover(ivs)
        want = _brute_force_minimum(ivs)
        assert len(members) == want, ivs
        assert union([ivs[i] for i in members]) == union(ivs), ivs
        assert pure == pytest.approx(sum(b - a for a, b in union(ivs))), ivs
        sizes.append(want)
    assert sizes[:5] == [2, 2, 1, 2, 3]
    assert max(sizes) >= 4  # the random cases reach covers of several items


def test_brute_force_oracle_refuses_iominers_greedy():
    """The oracle tells a non-minimum cover apart: IOMiner's rule keeps three items where two do."""
    ivs = [(0.0, 10.0), (0.5, 11.5), (9.0, 19.0)]
    assert len(iominer_greedy(ivs)) == 3 and _brute_force_minimum(ivs) == 2


# -- real logs ---------------------------------------------------------------------------------


def _ingest(spark, lake: Path, inputs: list[str], covers: bool = True) -> dict:
    """Bronze for these tests; ingest's own gates are tested in test_ingest and halve its time."""
    from jobs.ingest import run

    conf = load_config(
        "local",
        overrides={
            "lake": {"root": str(lake)},
            "gates": {"enabled": False},
            "ingest": {"covers": covers},
        },
    )
    return run(spark, conf, inputs, echo=lambda *_: None)


def _check_lake(spark, lake: Path) -> dict:
    """Every job's cover against all its intervals: same union, pure time = its measure, shares
    partition it, minimum (by brute force where small enough, else as proven by the row)."""
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    tables = {
        t: read_table(spark, BRONZE[t], conf.lake.root)
        for t in ("io_ops", "posix", "mpiio", "stdio", "files")
    }
    rows = intervals(**tables).toPandas()
    members = read_table(spark, SPEC, conf.lake.root).toPandas()
    assert not members.duplicated(["log_id", "record_id", "rank"]).any()
    # a log without DXT whose spans all miss its non-empty HEATMAP bins has no row
    missed = set(rows.log_id) - set(members.log_id)
    assert set(members.log_id) <= set(rows.log_id)
    if missed:
        heat = read_table(spark, BRONZE["heatmap"], conf.lake.root).select("log_id").distinct()
        assert missed <= {r.log_id for r in heat.collect()}
    figures = {
        "jobs": 0,
        "members": 0,
        "cover": 0,
        "brute_forced": 0,
        "proven": 0,
        "per_op": 0,
        "gapped": 0,
        "heatmap": 0,
    }
    for log_id, its in rows.groupby("log_id"):
        mem = members[members.log_id == log_id]
        items = {k: list(zip(g.start_s, g.end_s)) for k, g in its.groupby(["record_id", "rank"])}
        whole = union([iv for ivs in items.values() for iv in ivs])
        assert (mem.pure_io_time_min_s <= mem.pure_io_time_s).all(), log_id
        assert mem.exact.all() == (its.interval_source.iloc[0] != "counters"), log_id
        if mem.time_source.iloc[0] == "heatmap":  # spans cut to HEATMAP bins: `_check_heatmap`
            assert mem.pure_io_time_s.iloc[0] <= sum(b - a for a, b in whole) + 1e-9, log_id
            assert mem.share_s.sum() == pytest.approx(mem.pure_io_time_s.iloc[0], abs=1e-9)
            figures["heatmap"] += 1
            figures["jobs"] += 1
            continue
        got = union([iv for k in zip(mem.record_id, mem["rank"]) for iv in items[k]])
        assert len(got) == len(whole), log_id
        assert [x for c in got for x in c] == pytest.approx([x for c in whole for x in c]), log_id
        pure = mem.pure_io_time_s.iloc[0]
        assert pure == pytest.approx(sum(b - a for a, b in whole), rel=1e-9, abs=1e-9), log_id
        assert mem.share_s.sum() == pytest.approx(pure, rel=1e-9, abs=1e-9), log_id
        assert (mem.cover_size == len(mem)).all() and (mem.n_intervals == len(items)).all()
        assert (
            mem.interval_source.nunique() == 1
            and (mem.interval_source == its.interval_source.iloc[0]).all()
        )
        minimum = _brute_force_members(list(items.values()), budget=20_000)
        if minimum is not None:  # small enough to try every subset up to the cover's size
            assert len(mem) == minimum, log_id
            assert mem.cover_proven_minimum.all(), log_id
            figures["brute_forced"] += 1
        figures["jobs"] += 1
        figures["members"] += len(items)
        figures["cover"] += len(mem)
        figures["proven"] += bool(mem.cover_proven_minimum.all())
        figures["per_op"] += its.interval_source.iloc[0] != "counters"
        figures["gapped"] += any(len(union(ivs)) > 1 for ivs in items.values())
    return figures


# -- ingest's cover of one decoded log: the Spark pass's rows, by the same rules ------------------

NAN = float("nan")


@pytest.fixture(scope="module")
def odd_bronze(spark):
    """Logs with the timestamps real logs carry besides clean ones: G counters with NaN, null,
    zero and negative timestamps; H ops with NaN, negative, reversed and unattached intervals, and
    both DXT and Recorder rows."""
    posix = _df(
        spark,
        "posix",
        [
            _ts(
                "posix", "G", 40, 0, read=(NAN, 5.0), write=(1.0, 3.0)
            ),  # NaN start loses to 1.0: [1, 5]
            _ts(
                "posix", "G", 41, 0, read=(2.0, NAN), write=(1.0, 3.0)
            ),  # NaN end wins every max: no span
            _ts(
                "posix", "G", 42, 0, read=(-1.0, 4.0), write=(0.5, 2.0)
            ),  # -1 was never taken: [0.5, 4]
            _ts("posix", "G", 44, 0, read=(None, None), write=(1.0, None)),  # no end: no span
            _ts("posix", "G", 45, 0, read=(None, 2.0), write=(1.0, 3.0)),  # [1, 3]
            _ts("posix", "G", 46, -1, read=(7.0, 9.0)),
        ],
    )
    mpiio = _df(
        spark,
        "mpiio",
        [
            _ts("mpiio", "G", 42, 0, write=(0.25, 4.5)),  # widens posix 42: [0.25, 4.5]
            _ts("mpiio", "G", 40, 1, read=(NAN, NAN)),
        ],
    )
    io_ops = _df(
        spark,
        "io_ops",
        [
            _op("H", 50, 0, 0, "write", NAN, 1.0),
            _op("H", 50, 0, 1, "write", -0.5, 1.0),
            _op("H", 50, 0, 2, "write", 3.0, 2.0),
            _op("H", None, 0, 3, "write", 0.0, 9.0),
            _op("H", 50, 0, 4, "write", 1.0, 2.0),
            _op("H", 51, 1, 0, "read", 1.5, 4.0, "RECORDER"),
            _op("H", 51, 1, 1, "read", 2.0, NAN, "RECORDER"),
            _op("H", 52, 0, 0, "read", 0.0, 0.0),
        ],
    )
    empty = {t: spark.createDataFrame([], BRONZE[t].struct) for t in ("stdio", "files", "heatmap")}
    return {"io_ops": io_ops, "posix": posix, "mpiio": mpiio, **empty}


def _per_log_arrow(frames: dict) -> dict:
    """Bronze frames as ingest holds a decoded log: {log_id: {table: Arrow table of its decoded columns}}."""
    import pyarrow as pa

    logs: dict = {}
    for t, df in frames.items():
        schema = BRONZE[t].decoded_arrow_schema
        for r in df.collect():
            logs.setdefault(r.log_id, {}).setdefault(t, []).append({c: r[c] for c in schema.names})
    return {
        log: {
            t: pa.Table.from_pylist(rows, schema=BRONZE[t].decoded_arrow_schema)
            for t, rows in tabs.items()
        }
        for log, tabs in logs.items()
    }


def _cover_rows(rows) -> list[tuple]:
    """Cover rows as sorted tuples (floats bit for bit: NaN would not equal itself, and none is allowed)."""
    return sorted(tuple(r[c] for c in SPEC.columns) for r in rows)


def test_ingest_covers_each_decoded_log_as_the_spark_pass_does(spark, bronze, odd_bronze):
    from features.covering_sets import log_covers

    frames = {t: bronze[t].unionByName(odd_bronze[t]) for t in bronze}
    spark_rows = _cover_rows(r.asDict() for r in _transform(frames).collect())
    ingest_rows = []
    for log, tables in _per_log_arrow(frames).items():
        for r in log_covers(tables).to_pylist():
            ingest_rows.append({"log_id": log, "job_month": MONTH, **r})
    assert {r[0] for r in spark_rows} == {"A", "B", "C", "E", "G", "H", "K"}  # D, F: no interval
    assert _cover_rows(ingest_rows) == spark_rows
    g = {(r[3], r[2]): (r[4], r[5]) for r in spark_rows if r[0] == "G"}
    assert (
        g[(42, 0)] == (0.25, 4.5) and (41, 0) not in g and (44, 0) not in g
    )  # what the odd timestamps give
    h = [r for r in spark_rows if r[0] == "H"]
    assert {r[7] for r in h} == {"recorder"} and h[0][8] == 3  # members (50, 0), (51, 1), (52, 0)


def test_ingest_covers_many_logs_at_once_as_each_alone(spark, bronze, odd_bronze):
    """Ingest covers a staged file's logs in one call (`covers_of` on their tables stacked, each log twice so
    equal records of two logs sit side by side): every log gets exactly `log_covers` of its own tables."""
    import numpy as np
    import pyarrow as pa

    from features.covering_sets import INPUTS, covers_of, log_covers

    logs = _per_log_arrow({t: bronze[t].unionByName(odd_bronze[t]) for t in bronze})
    names = [*logs, *logs]
    stacked, codes = {}, {}
    for t in INPUTS:
        parts = [
            (k, logs[n][t]) for k, n in enumerate(names) if t in logs[n] and logs[n][t].num_rows
        ]
        if parts:
            stacked[t] = pa.concat_tables([p for _, p in parts])
            codes[t] = np.repeat([k for k, _ in parts], [p.num_rows for _, p in parts])
    got, at = covers_of(stacked, codes)
    assert got.schema == BRONZE["covers"].decoded_arrow_schema and got.num_rows == len(at)
    total = 0
    for k, n in enumerate(names):
        want = log_covers(logs[n]).to_pylist()
        assert got.filter(pa.array(at == k)).to_pylist() == want, n
        total += len(want)
    assert total == got.num_rows > 20


def test_ingest_cover_of_a_log_without_an_interval_is_empty():
    import pyarrow as pa

    from features.covering_sets import log_covers

    assert log_covers({}).num_rows == 0
    opened = {
        "posix": pa.Table.from_pylist(
            [{"record_id": 1, "rank": 0}], schema=BRONZE["posix"].decoded_arrow_schema
        )
    }
    got = log_covers(opened)
    assert got.num_rows == 0 and got.schema == BRONZE["covers"].decoded_arrow_schema


@pytest.fixture(scope="module")
def sample_lake(spark, tmp_path_factory):
    import darshan

    lake = tmp_path_factory.mktemp("covering_sample_lake")
    _ingest(spark, lake, [str(Path(darshan.__file__).parent / "examples" / "example_logs")])
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    return lake, covering.run(spark, conf, echo=lambda *_: None)


@pytest.mark.slow
def test_covering_in_month_batches_writes_what_one_batch_writes(spark, sample_lake, tmp_path):
    """Over more new logs than `spark.batch_logs`, a `new_logs.by_month` stage runs once per batch of
    whole job_months (here one month a batch), committing each: the same covering sets, row for
    row, as the sample lake's one-batch run over the same logs, and the summary adds up."""
    import darshan

    from tests.support.compare import compare

    lake, once = sample_lake
    other = tmp_path / "lake"
    _ingest(spark, other, [str(Path(darshan.__file__).parent / "examples" / "example_logs")])
    jobs = read_table(spark, BRONZE["jobs"], str(other))
    months = {r.job_month for r in jobs.select("job_month").distinct().collect()}
    assert len(months) >= 2  # so that there is more than one batch
    conf = load_config(
        "local", overrides={"lake": {"root": str(other)}, "spark": {"batch_logs": 1}}
    )
    said: list[str] = []
    batched = covering.run(spark, conf, echo=said.append)
    assert any(f"{len(months)} batches of whole months" in line for line in said), said
    assert sum(line.startswith("[covering] batch ") for line in said) == len(months), said
    assert (batched["covered"], batched["members"]) == (once["covered"], once["members"])
    assert batched["rows"] == once["rows"]
    (row,) = [r for r in compare(str(lake), str(other)) if r["table"] == "silver/covering_sets"]
    assert row["equal"] and row["rows_a"] == once["members"], row
    assert covering.run(spark, conf, echo=lambda *_: None)["logs"] == 0  # every batch committed


@pytest.mark.slow
def test_covering_run_on_sample_logs_covers_every_job(spark, sample_lake):
    lake, summary = sample_lake
    assert summary["covered"] >= 4 and summary["members"] >= summary["covered"]
    figures = _check_lake(spark, lake)
    assert figures["jobs"] == summary["covered"]
    assert (
        figures["brute_forced"] >= figures["jobs"] // 2
    )  # 4 of the 6 sample jobs are small enough
    sources = {
        r.interval_source
        for r in read_table(spark, SPEC, str(lake)).select("interval_source").distinct().collect()
    }
    assert sources == {"dxt", "counters"}  # dxt.darshan has DXT segments


@pytest.mark.slow
def test_covering_rerun_adds_nothing(spark, sample_lake, capsys):
    lake, _ = sample_lake
    before = table_version(spark, SPEC, str(lake))
    assert covering.main(["--lake", str(lake)]) == 0
    assert table_version(spark, SPEC, str(lake)) == before
    assert (
        covering.run(
            spark,
            load_config("local", overrides={"lake": {"root": str(lake)}}),
            echo=lambda *_: None,
        )["members"]
        == 0
    )


@pytest.fixture(scope="module")
def corpus_lake(spark, tmp_path_factory):
    """Every shared Darshan log and Recorder trace, ingested once, then covered."""
    lake = tmp_path_factory.mktemp("covering_corpus_lake")
    _ingest(spark, lake, [str(shared_path("darshan")), str(shared_path("recorder"))])
    return lake, covering.run(
        spark, load_config("local", overrides={"lake": {"root": str(lake)}}), echo=lambda *_: None
    )


@pytest.mark.slow
def test_covering_over_every_shared_log_matches_pure_io_time(spark, corpus_lake):
    lake, summary = corpus_lake
    f = _check_lake(spark, lake)
    print(
        f"\n[covering] {summary['logs']} logs, {f['jobs']} with intervals ({f['per_op']} from DXT or Recorder "
        f"ops, {f['gapped']} with a member whose ops leave gaps, {f['heatmap']} bounded by HEATMAP), "
        f"{f['members']} members; mean cover "
        f"{f['cover'] / f['jobs']:.2f}; proven minimum on {f['proven']}; brute-forced on {f['brute_forced']}"
    )
    assert f["jobs"] > 50 and f["brute_forced"] > 0 and f["per_op"] > 0 and f["gapped"] > 0
    assert f["heatmap"] >= 30  # the logs with HEATMAP and no DXT (bench.heatmap_bounds: 42)
    sources = {
        r.interval_source
        for r in read_table(spark, SPEC, str(lake)).select("interval_source").distinct().collect()
    }
    assert sources == {"dxt", "recorder", "counters"}


def _spark_pass(spark, lake: Path):
    """The covering stage's own Spark pass over every log of the lake's bronze."""
    return covering.transform(
        {
            f"bronze/{t}": read_or_empty(spark, BRONZE[t], str(lake))
            for t in ("io_ops", "posix", "mpiio", "stdio", "files", "heatmap")
        },
        None,
    )[covering.OUT]


@pytest.mark.slow
def test_covers_from_ingest_are_the_spark_pass_on_every_shared_log(spark, corpus_lake):
    lake, summary = corpus_lake
    assert summary["from_ingest"] == summary["logs"] > 50 and summary["spark_pass"] == 0
    assert read_table(spark, BRONZE["covers"], str(lake)).count() == summary["members"]
    assert _cover_rows(read_table(spark, SPEC, str(lake)).collect()) == _cover_rows(
        _spark_pass(spark, lake).collect()
    )


@pytest.mark.slow
def test_covering_covers_in_spark_the_logs_ingest_did_not(spark, tmp_path):
    import darshan

    logs = sorted((Path(darshan.__file__).parent / "examples" / "example_logs").glob("*.darshan"))
    halves = [tmp_path / "old", tmp_path / "new"]
    for k, folder in enumerate(halves):
        folder.mkdir()
        for p in logs[k::2]:
            (folder / p.name).symlink_to(p)
    lake = tmp_path / "lake"
    _ingest(spark, lake, [str(halves[0])], covers=False)  # as before bronze/covers: no log covered
    _ingest(spark, lake, [str(halves[1])])
    led = read_table(spark, BRONZE["logs"], str(lake)).where("status != 'quarantined'").collect()
    by_half = {
        "covers" in (r.row_counts or {}) for r in led if Path(r.source_uri).parent == halves[0]
    }
    assert by_half == {False} and {
        "covers" in r.row_counts for r in led if Path(r.source_uri).parent == halves[1]
    } == {True}
    summary = covering.run(
        spark, load_config("local", overrides={"lake": {"root": str(lake)}}), echo=lambda *_: None
    )
    n_new = sum(Path(r.source_uri).parent == halves[1] for r in led)
    assert summary["from_ingest"] == n_new and summary["spark_pass"] == len(led) - n_new > 0
    assert _cover_rows(read_table(spark, SPEC, str(lake)).collect()) == _cover_rows(
        _spark_pass(spark, lake).collect()
    )
    _check_lake(spark, lake)


@pytest.mark.slow
def test_covering_over_the_corpus_rerun_adds_nothing(spark, corpus_lake):
    lake, _ = corpus_lake
    before = table_version(spark, SPEC, str(lake))
    assert (
        covering.run(
            spark,
            load_config("local", overrides={"lake": {"root": str(lake)}}),
            echo=lambda *_: None,
        )["members"]
        == 0
    )
    assert table_version(spark, SPEC, str(lake)) == before


# -- the IOR sweep: pure I/O time is the union of the DXT ops, read independently ---------------


def _sweep_runs(every: bool) -> list[Path]:
    """Darshan logs of the IOR sweep: all of them, or one per interface / file layout (rep 1, bb)."""
    import pandas as pd

    root = shared_path("iosweep")
    runs = pd.read_csv(root / "runs.csv")
    runs = runs[runs.tracer == "darshan"]
    if not every:
        runs = runs[(runs.rep == 1) & (runs.tier == "bb")].drop_duplicates(
            ["api", "file_per_proc", "collective"]
        )
        runs = runs.head(4)
    return [root / p for p in runs.darshan_log]


def _sweep_check(spark, lake: Path, paths: list[Path]) -> dict:
    """Ingest and cover `paths`; each log's pure I/O time against its DXT union by pydarshan."""
    _ingest(spark, lake, [str(p) for p in paths])
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    covering.run(spark, conf, echo=lambda *_: None)
    logs = read_table(spark, BRONZE["logs"], str(lake)).select("log_id", "source_uri").toPandas()
    rows = (
        read_table(spark, SPEC, str(lake))
        .toPandas()
        .drop_duplicates("log_id")
        .merge(logs, on="log_id")
    )
    by_name = {Path(u).name: r for u, r in zip(rows.source_uri, rows.itertuples())}
    figures = {"logs": len(paths), "dxt": 0, "equal": 0, "untraced": 0, "proven": 0}
    for p in paths:
        want = dxt_union_s(str(p))
        if want is None:
            continue
        figures["dxt"] += 1
        row = by_name[p.name]
        assert row.interval_source == "dxt", p.name
        assert row.pure_io_time_s == pytest.approx(want, rel=1e-9, abs=1e-9), p.name
        figures["equal"] += 1
        figures["untraced"] += row.n_untraced_items > 0
        figures["proven"] += bool(row.cover_proven_minimum)
    return figures


@pytest.mark.slow
def test_covering_pure_io_time_is_the_union_of_dxt_ops_on_sweep_logs(spark, tmp_path):
    f = _sweep_check(spark, tmp_path / "lake", _sweep_runs(every=False))
    assert f["dxt"] == f["equal"] == f["logs"] == 4
    assert f["untraced"] == 4  # IOR's ior.json (STDIO) is left out of every one


def _recording_stage(tmp_path, monkeypatch, name: str, expr: str):
    """(module, Stage) of a stage incremental by log over bronze/jobs whose transform appends `expr`,
    evaluated on its bronze/jobs input `df`, to the module's SEEN and writes nothing."""
    import importlib

    from iolake.pipeline import Stage

    (tmp_path / f"{name}.py").write_text(
        "SEEN = []\ndef transform(inputs, conf):\n    df = inputs['bronze/jobs']\n"
        f"    SEEN.append({expr})\n    return {{}}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    stage = Stage(
        name,
        name,
        ("bronze/jobs",),
        ("silver/bottleneck_tags",),
        (),
        {},
        {"from": "bronze/jobs", "done": "silver/bottleneck_tags"},
    )
    return importlib.import_module(name), stage


@pytest.mark.slow
def test_runner_scales_aqe_initial_partitions_with_the_new_logs_and_restores_them(
    spark, sample_lake, tmp_path, monkeypatch
):
    """A stage over N new logs starts AQE's shuffles at max(shuffle.partitions, N / spark.logs_per_partition)
    partitions, only while it runs (the runner; shown here on the sample lake's logs)."""
    from iolake.runner import INITIAL_PARTITIONS, run_stage

    lake, _ = sample_lake
    probe_stage, stage = _recording_stage(
        tmp_path,
        monkeypatch,
        "probe_stage",
        "df.sparkSession.conf.get('spark.sql.adaptive.coalescePartitions.initialPartitionNum', None)",
    )
    n_logs = (
        spark.read.format("delta")
        .load(str(lake / "bronze" / "jobs"))
        .select("log_id")
        .distinct()
        .count()
    )
    assert n_logs > int(
        spark.conf.get("spark.sql.shuffle.partitions")
    )  # so that one log a partition shows
    for per, want in ((1, str(n_logs)), (0, None), (10**6, None)):
        conf = load_config(
            "local", overrides={"lake": {"root": str(lake)}, "spark": {"logs_per_partition": per}}
        )
        run_stage(spark, conf, stage, echo=lambda *_: None)
        assert probe_stage.SEEN[-1] == want, per
        assert spark.conf.get(INITIAL_PARTITIONS, None) is None  # restored after the stage


@pytest.mark.slow
def test_runner_broadcasts_the_new_log_ids_it_filters_inputs_with(
    spark, sample_lake, tmp_path, monkeypatch
):
    """With automatic broadcasts off, a stage's inputs are still filtered by a broadcast of its new log ids
    (up to runner.BROADCAST_TODO_MAX of them), not by shuffling every input row by log_id."""
    from iolake import runner

    lake, _ = sample_lake
    plan_stage, stage = _recording_stage(
        tmp_path, monkeypatch, "plan_stage", "df._jdf.queryExecution().executedPlan().toString()"
    )
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    was = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        runner.run_stage(spark, conf, stage, echo=lambda *_: None)
        monkeypatch.setattr(runner, "BROADCAST_TODO_MAX", 0)
        runner.run_stage(spark, conf, stage, echo=lambda *_: None)
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", was)
    hinted, left_to_planner = plan_stage.SEEN[-2:]
    assert "BroadcastHashJoin" in hinted and "LeftSemi" in hinted
    assert "BroadcastHashJoin" not in left_to_planner and "LeftSemi" in left_to_planner


@pytest.mark.slow
def test_runner_reads_only_the_new_logs_job_month_partitions(
    spark, sample_lake, tmp_path, monkeypatch
):
    """A stage's inputs partitioned by job_month are read in the new logs' months only (the scan's
    partition filter lists them), with the same rows as the unpruned read; past PRUNE_MONTHS_MAX months
    (a backfill over every month) there is no partition filter."""
    import re

    from iolake import runner
    from iolake.pipeline import Stage

    lake, _ = sample_lake
    probe, _ = _recording_stage(
        tmp_path,
        monkeypatch,
        "month_stage",
        "(df._jdf.queryExecution().executedPlan().toString(), "
        "sorted(tuple(r) for r in df.select('log_id', 'jobid').collect()))",
    )
    stage = Stage(
        "month_stage",
        "month_stage",
        ("bronze/jobs",),
        ("silver/bottleneck_tags",),
        (),
        {},
        {"from": "bronze/jobs", "done": "silver/bottleneck_tags"},
    )
    # the new logs: the lake's jobs of one month (as a nightly drop's), from the runner's own finder
    jobs = spark.read.format("delta").load(str(lake / "bronze" / "jobs"))
    months = sorted(r.job_month for r in jobs.select("job_month").distinct().collect())
    assert len(months) >= 2
    want_months = months[-1:]
    want_rows = sorted(
        tuple(r)
        for r in jobs.where(jobs.job_month == months[-1]).select("log_id", "jobid").collect()
    )
    import iolake.lake

    finder = iolake.lake.unprocessed_logs
    monkeypatch.setattr(
        iolake.lake, "unprocessed_logs", lambda *a: finder(*a).where(f"job_month = '{months[-1]}'")
    )

    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    runner.run_stage(spark, conf, stage, echo=lambda *_: None)
    monkeypatch.setattr(runner, "PRUNE_MONTHS_MAX", 0)
    runner.run_stage(spark, conf, stage, echo=lambda *_: None)
    (pruned_plan, pruned_rows), (full_plan, full_rows) = probe.SEEN[-2:]
    assert pruned_rows == full_rows == want_rows
    filters = re.search(r"PartitionFilters: \[([^\]]*)\]", pruned_plan).group(1)
    assert sorted(re.findall(r"\d{4}-\d{2}", filters)) == want_months, filters
    assert re.search(r"PartitionFilters: \[\]", full_plan), full_plan


def test_month_filter_keeps_the_listed_months_and_null(spark):
    from iolake.runner import month_filter

    df = spark.createDataFrame(
        [("a", "2024-01"), ("b", "2024-02"), ("c", None)], "log_id string, job_month string"
    )
    kept = lambda months: sorted(r.log_id for r in df.where(month_filter(months)).collect())  # noqa: E731
    assert kept(["2024-02"]) == ["b"]
    assert kept(["2024-01", None]) == ["a", "c"]
    assert kept([None]) == ["c"]
    assert kept([]) == []


def test_months_text_names_a_log_without_a_month():
    from iolake.lake.delta import months_text

    assert months_text(["2024-01", None]) == "2024-01, no month"
    assert months_text([None]) == "no month"


@pytest.mark.slow
def test_runner_records_new_logs_left_without_a_row_and_does_not_redo_them(
    spark, sample_lake, tmp_path, monkeypatch
):
    """A stage that leaves a new log without a row in its `done` table (covering: a job without an I/O
    interval) records it in ops/empty_logs, and the next run does not take it as new work again; a
    rebuilt `done` table (a new Delta table id) makes those records void."""
    import shutil

    from delta.tables import DeltaTable

    from iolake import runner
    from iolake.lake import table_id, unprocessed_logs
    from iolake.pipeline import Stage
    from schemas import OPS

    lake = tmp_path / "lake"
    shutil.copytree(sample_lake[0], lake)
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    covering_path = str(lake / "silver" / "covering_sets")
    rows = spark.read.format("delta").load(covering_path)
    log_id = sorted(r.log_id for r in rows.select("log_id").distinct().collect())[0]
    saved = rows.toPandas()
    DeltaTable.forPath(spark, covering_path).delete(
        f"log_id = '{log_id}'"
    )  # now new work for covering

    probe, _ = _recording_stage(tmp_path, monkeypatch, "empty_stage", "df.count()")
    stage = Stage(
        "empty_stage",
        "empty_stage",
        ("bronze/jobs",),
        ("silver/covering_sets",),
        (),
        {},
        {"from": "bronze/jobs", "done": "silver/covering_sets"},
    )
    first = runner.run_stage(spark, conf, stage, echo=lambda *_: None)
    assert first["logs"] == 1 and first["empty_logs"] == 1 and probe.SEEN == [1]
    marks = spark.read.format("delta").load(str(lake / "ops" / "empty_logs")).collect()
    assert [(m.stage, m.done_table, m.log_id) for m in marks] == [
        ("empty_stage", "silver/covering_sets", log_id)
    ]
    assert marks[0].done_table_id == table_id(spark, SILVER["covering_sets"], str(lake))

    again = runner.run_stage(spark, conf, stage, echo=lambda *_: None)
    assert again["logs"] == 0 and probe.SEEN == [1]  # not new work again
    # another stage with the same `done` table is not bound by this stage's records
    other = unprocessed_logs(spark, BRONZE["jobs"], SILVER["covering_sets"], str(lake), "covering")
    assert [r.log_id for r in other.collect()] == [log_id]

    shutil.rmtree(covering_path)  # rebuilt: a new table, the records of the old one are void
    spark.createDataFrame(saved[saved.log_id != log_id], SPEC.struct).write.format("delta").save(
        covering_path
    )
    todo = unprocessed_logs(
        spark, BRONZE["jobs"], SILVER["covering_sets"], str(lake), "empty_stage"
    )
    assert [r.log_id for r in todo.collect()] == [log_id]
    assert OPS["empty_logs"].path(str(lake)).endswith("ops/empty_logs")


@pytest.mark.slow
def test_runner_looks_for_new_logs_in_the_months_committed_since_its_mark(
    spark, sample_lake, tmp_path, monkeypatch
):
    """After covering succeeds its `done` table carries the mark (iolake/lake/changes.py): a rerun
    with nothing committed reads no month; rows deleted from one month make that month, and only
    it, the next run's search, whose logs are covered again; a failed run leaves the mark as it
    was, so its logs are found again by the run after it."""
    import shutil

    from delta.tables import DeltaTable

    from iolake import runner
    from iolake.lake.changes import read_mark

    lake = tmp_path / "lake"
    shutil.copytree(sample_lake[0], lake)
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    mark = read_mark(spark, SPEC, str(lake), "covering")
    jobs_version = table_version(spark, BRONZE["jobs"], str(lake))
    assert mark["from"] == "bronze/jobs" and 0 <= mark["from_version"] <= jobs_version

    lines = []
    assert runner.run_stage(spark, conf, "covering", echo=lines.append)["logs"] == 0
    assert not any("looked for" in line for line in lines)
    mark = read_mark(spark, SPEC, str(lake), "covering")  # the run set it with the table's version
    done_version = table_version(spark, SPEC, str(lake))
    assert runner.run_stage(spark, conf, "covering", echo=lines.append)["logs"] == 0
    assert table_version(spark, SPEC, str(lake)) == done_version  # nothing new: no new mark

    rows = read_table(spark, SPEC, str(lake))
    log_id, month = sorted(tuple(r) for r in rows.select("log_id", "job_month").collect())[0]
    cols = ("log_id", "rank", "record_id", "start_s", "end_s")
    want = sorted(map(tuple, rows.where(f"log_id = '{log_id}'").select(*cols).collect()))
    DeltaTable.forPath(spark, SPEC.path(str(lake))).delete(f"log_id = '{log_id}'")

    def fail(ctx):
        raise RuntimeError("stage failed")

    monkeypatch.setattr(covering, "execute", fail)
    with pytest.raises(RuntimeError, match="stage failed"):
        runner.run_stage(spark, conf, "covering", echo=lambda *_: None)
    assert read_mark(spark, SPEC, str(lake), "covering") == mark
    monkeypatch.undo()

    lines.clear()
    summary = runner.run_stage(spark, conf, "covering", echo=lines.append)
    assert summary["logs"] == 1
    assert [line for line in lines if "looked for" in line] == [
        f"[covering] new logs looked for in {month}: the months committed since its last run"
    ]
    got = read_table(spark, SPEC, str(lake)).where(f"log_id = '{log_id}'")
    assert sorted(map(tuple, got.select(*cols).collect())) == want
    assert read_mark(spark, SPEC, str(lake), "covering")["done_version"] > mark["done_version"]


# -- bounds without DXT on written logs: HEATMAP, counters, an older lake -------------------------


def _k_log(path: Path, heatmap: bool = True) -> None:
    """Log K of the `bronze` fixture written as a Darshan log (`tests/support/darshan_writer.py`):
    POSIX files a.dat (rank 0, read span [0.5, 5.5], 0.8 s of reads and writes), b.dat (rank 1, write
    span [4.5, 5.75], 1.1 s) and a shared file (read span [1.5, 4.2], slowest rank 1 with 2.0 s of
    which at most 0.5 s metadata); STDIO c.txt (rank 0, [1.2, 1.7], 0.25 s); with `heatmap`, HEATMAP
    records: rank 0 at 1 s bins with bytes in [1, 2] and [4, 5], rank 1 at 2 s bins with bytes in [4, 6]."""
    import io

    from tests.support import darshan_writer as w

    names = {
        0xA0: "/scratch/a.dat",
        0xA1: "/scratch/b.dat",
        0xA2: "/scratch/shared.dat",
        0xA3: "/scratch/c.txt",
        0xB0: "heatmap:POSIX",
    }
    posix = [
        w.counter_record(
            "posix",
            0xA0,
            0,
            POSIX_READS=1,
            POSIX_BYTES_READ=5,
            POSIX_F_READ_START_TIMESTAMP=0.5,
            POSIX_F_READ_END_TIMESTAMP=5.5,
            POSIX_F_READ_TIME=0.6,
            POSIX_F_WRITE_TIME=0.2,
            POSIX_F_META_TIME=9.0,
        ),
        w.counter_record(
            "posix",
            0xA1,
            1,
            POSIX_WRITES=1,
            POSIX_BYTES_WRITTEN=10,
            POSIX_F_WRITE_START_TIMESTAMP=4.5,
            POSIX_F_WRITE_END_TIMESTAMP=5.75,
            POSIX_F_WRITE_TIME=1.1,
        ),
        w.counter_record(
            "posix",
            0xA2,
            -1,
            POSIX_READS=2,
            POSIX_SLOWEST_RANK=1,
            POSIX_F_READ_START_TIMESTAMP=1.5,
            POSIX_F_READ_END_TIMESTAMP=4.2,
            POSIX_F_READ_TIME=9.0,
            POSIX_F_WRITE_TIME=9.0,
            POSIX_F_META_TIME=0.5,
            POSIX_F_SLOWEST_RANK_TIME=2.0,
        ),
    ]
    stdio = [
        w.counter_record(
            "stdio",
            0xA3,
            0,
            STDIO_WRITES=1,
            STDIO_F_WRITE_START_TIMESTAMP=1.2,
            STDIO_F_WRITE_END_TIMESTAMP=1.7,
            STDIO_F_WRITE_TIME=0.25,
        )
    ]
    regions = {w.POSIX: posix, w.STDIO: stdio}
    if heatmap:
        regions[w.HEATMAP] = [
            w.heatmap_record(0xB0, 0, 1.0, [0, 0, 0, 0, 7, 0], [0, 5, 0, 0, 0, 0]),
            w.heatmap_record(0xB0, 1, 2.0, [0, 0, 3], [0, 0, 0]),
        ]
    fh = io.BytesIO()
    w.write_log(fh, regions, w.VERSIONS, names=names, nprocs=2)
    path.write_bytes(fh.getvalue())


@pytest.fixture(scope="module")
def written_lake(spark, tmp_path_factory):
    """Log K with and without its HEATMAP, ingested and covered."""
    tmp = tmp_path_factory.mktemp("covering_written")
    logs = tmp / "logs"
    logs.mkdir()
    _k_log(logs / "k_heatmap.darshan")
    _k_log(logs / "k_counters.darshan", heatmap=False)
    lake = tmp / "lake"
    _ingest(spark, lake, [str(logs)])
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    return lake, covering.run(spark, conf, echo=lambda *_: None)


def _by_file(spark, lake: Path) -> dict:
    """{log file name: its covering-set rows (dicts), by start}."""
    led = read_table(spark, BRONZE["logs"], str(lake)).collect()
    name = {r.log_id: Path(r.source_uri).name for r in led}
    out: dict = {}
    for r in read_table(spark, SPEC, str(lake)).collect():
        out.setdefault(name[r.log_id], []).append(r.asDict())
    return {k: sorted(v, key=lambda r: r["start_s"]) for k, v in out.items()}


@pytest.mark.slow
def test_written_log_without_dxt_is_bounded_by_its_heatmap_bins(spark, written_lake):
    """The hand-derived figures of `test_log_members_bound_a_log_without_dxt_by_its_heatmap_bins`,
    through the decoder, ingest and the covering stage: at most 2.75 s (the spans whole: 5.25 s),
    at least 2.6 s; with no HEATMAP the spans stand, at most 5.25 s."""
    lake, summary = written_lake
    assert summary["covered"] == 2 and summary["spark_pass"] == 0
    got = _by_file(spark, lake)
    k = got["k_heatmap.darshan"]
    assert [(r["rank"], r["start_s"], r["end_s"], r["share_s"]) for r in k] == [
        (0, 1.0, 5.5, 2.5),
        (1, 4.5, 5.75, 0.25),
    ]
    assert {
        (r["time_source"], r["exact"], r["pure_io_time_s"], r["pure_io_time_min_s"]) for r in k
    } == {("heatmap", False, 2.75, 2.6)}
    c = got["k_counters.darshan"]
    assert {
        (r["time_source"], r["exact"], r["pure_io_time_s"], r["pure_io_time_min_s"]) for r in c
    } == {("counters", False, 5.25, 2.6)}
    # the U of the oracle: the union of non-empty bins after re-binning to the widest width
    heat = read_table(spark, BRONZE["heatmap"], str(lake)).toPandas()
    assert _binned_union_s(heat) == 4.0 and k[0]["pure_io_time_s"] <= 4.0
    assert _cover_rows(read_table(spark, SPEC, str(lake)).collect()) == _cover_rows(
        _spark_pass(spark, lake).collect()
    )


def _binned_union_s(heat) -> float:
    """The oracle's bound: seconds of the bins with bytes once every HEATMAP row of one log is
    re-binned to the widest width (`apps/analysis/timeline.py`, as pydarshan's heat map does)."""
    import numpy as np

    from apps.analysis.timeline import common_bins, rebin

    width, nbins = common_bins(heat)
    total = np.zeros(nbins, dtype="int64")
    for r in heat.itertuples():
        both = np.asarray(r.read_bytes, "int64") + np.asarray(r.write_bytes, "int64")
        total += rebin(both, float(r.bin_width_s), width, nbins)
    return float(np.count_nonzero(total) * width)


@pytest.mark.slow
def test_covering_recomputes_covers_ingested_before_the_bounds(spark, tmp_path):
    """An older lake: bronze/covers and silver/covering_sets without the bound columns. The covering
    stage recomputes those logs in its Spark pass, and silver/covering_sets evolves (its old rows
    read null)."""
    import pyspark.sql.functions as F

    from features.covering_sets import BOUND_COLS

    logs = tmp_path / "logs"
    logs.mkdir()
    _k_log(logs / "k_heatmap.darshan")
    lake = tmp_path / "lake"
    _ingest(spark, lake, [str(logs)])
    old = [c for c in SPEC.columns if c not in BOUND_COLS]
    covers = read_table(spark, BRONZE["covers"], str(lake)).select(*old).collect()
    assert covers
    (
        spark.createDataFrame(
            covers, read_table(spark, BRONZE["covers"], str(lake)).select(*old).schema
        )
        .write.format("delta")
        .mode("overwrite")
        .option("overwriteSchema", "true")
        .partitionBy("job_month")
        .save(BRONZE["covers"].path(str(lake)))
    )
    stale = (
        read_table(spark, BRONZE["covers"], str(lake)).limit(1).withColumn("log_id", F.lit("old"))
    )
    stale.write.format("delta").partitionBy("job_month").save(SPEC.path(str(lake)))
    assert "time_source" not in read_table(spark, SPEC, str(lake)).columns
    summary = covering.run(
        spark, load_config("local", overrides={"lake": {"root": str(lake)}}), echo=lambda *_: None
    )
    assert summary["spark_pass"] == 1 and summary["from_ingest"] == 0
    rows = {r.log_id: r for r in read_table(spark, SPEC, str(lake)).collect()}
    assert rows["old"].time_source is None and rows["old"].exact is None
    new = [r for k, r in rows.items() if k != "old"]
    assert {(r.time_source, r.pure_io_time_s, r.pure_io_time_min_s) for r in new} == {
        ("heatmap", 2.75, 2.6)
    }
