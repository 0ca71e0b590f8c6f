"""Ingest of a streamed io_ops (a huge DXT trace): staged batch by batch into its own Parquet file,
every row lands, the ledger counts them; a log whose stream fails is quarantined and its partial
file deleted, never named in the ledger."""

from __future__ import annotations

import io
import types

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from jobs import ingest_tasks
from readers import native_darshan as native
from readers.base import Decoded, DecodeError
from schemas import BRONZE, SILVER
from tests.support.darshan_writer import DXT_POSIX, POSIX, dxt_header, dxt_record, write_log
from tests.support.data import need

need(
    native._native is not None,
    "needs iolake_native, the native decoder's extension (pip install ./native)",
)


def _big_dxt_log(segments: int, records: int = 5) -> bytes:
    """A log with one POSIX record and a DXT_POSIX region of random (incompressible) segments,
    larger compressed than `STREAM_DXT_OVER`, so the default decode streams it."""
    rng = np.random.default_rng(7)
    per = segments // records
    pieces = []
    for r in range(records):
        n = per if r < records - 1 else segments - per * (records - 1)
        pieces.append(dxt_header(1000 + r, r, b"nid%02d" % (r % 2), n - n // 3, n // 3))
        seg = np.empty(n, dtype=[("off", "<i8"), ("len", "<i8"), ("start", "<f8"), ("end", "<f8")])
        seg["off"] = rng.integers(0, 1 << 40, n)
        seg["len"] = rng.integers(1, 1 << 20, n)
        seg["start"] = rng.random(n) * 100
        seg["end"] = seg["start"] + rng.random(n)
        pieces.append(seg.tobytes())
    fh = io.BytesIO()
    write_log(fh, {POSIX: [bytes(704)], DXT_POSIX: pieces}, {POSIX: 4})
    return fh.getvalue()


def test_a_failing_stream_quarantines_the_log_and_deletes_its_staged_file(tmp_path):
    schema = BRONZE["io_ops"].decoded_arrow_schema
    good = native.decode(_small_log())

    def batches():
        yield pa.RecordBatch.from_pylist([], schema=schema)
        yield good.all_tables()["io_ops"].to_batches()[0]
        raise DecodeError("DXT_POSIX region: changed since it was scanned")

    d = Decoded(tables=good.tables, format="darshan", streams={"io_ops": batches})
    dec = types.SimpleNamespace(
        conf=types.SimpleNamespace(max_file_bytes=1 << 30), darshan=lambda path: d
    )
    row = {
        "log_id": "a" * 64,
        "source_uri": str(tmp_path / "x.darshan"),
        "size_bytes": 1,
        "mtime_ns": 0,
        "kind": "darshan",
    }
    written = []

    def stage(table, it, log_id, month):
        path = str(tmp_path / "staging" / table / "part.parquet")
        written.append(path)
        return ingest_tasks._stage(pafs.LocalFileSystem(), path, path, table, it, log_id, month)

    entry, tables, streamed = ingest_tasks._decode_row(dec, row, "run", 1 << 20, stage)
    assert entry["status"] == "quarantined" and "changed since it was scanned" in entry["reason"]
    assert tables == {} and streamed == [] and written
    assert not list((tmp_path / "staging").rglob("*.parquet"))


def _small_log() -> bytes:
    fh = io.BytesIO()
    seg = [(4096 * k, 4096, k * 0.5, k * 0.5 + 0.25) for k in range(10)]
    write_log(
        fh, {POSIX: [bytes(704)], DXT_POSIX: [dxt_record(1, 0, b"nid1", seg, seg[:3])]}, {POSIX: 4}
    )
    return fh.getvalue()


def test_with_ingest_columns_adds_constant_columns_to_tables_and_batches():
    t = native.decode(_small_log()).tables["io_ops"]
    for x in (t, t.to_batches()[0]):
        out = ingest_tasks.with_ingest_columns("io_ops", x, "L" * 64, "2020-09")
        assert type(out) is type(x) and out.num_rows == 13
        assert set(out.column("log_id").to_pylist()) == {"L" * 64}
        assert set(out.column("job_month").to_pylist()) == {"2020-09"}
        assert out.schema.names[:2] == ["log_id", "job_month"]


def test_stack_logs_gives_each_row_its_own_log_id():
    t = native.decode(_small_log()).tables["io_ops"]
    a, b = t.slice(0, 4), t.slice(4)
    out = ingest_tasks.stack_logs(
        "io_ops", [("A" * 64, a), ("B" * 64, b), ("C" * 64, t.slice(0, 0))], "2020-09"
    )
    assert out.column("log_id").to_pylist() == ["A" * 64] * 4 + ["B" * 64] * 9
    assert out.drop_columns(["log_id", "job_month"]).equals(t)
    assert out.schema.equals(ingest_tasks._bronze_schema("io_ops"))


def test_derive_stacked_counts_every_log_and_falls_back_log_by_log():
    """The stacked rules run once on a staged file's logs; each log's count (0 included) lands in its ledger
    entry. When a rule fails on the stack, it runs log by log: only the log it fails on goes without (noted)."""
    from iolake.config import load_config

    d = native.decode(_small_log())
    t = d.tables["io_ops"]
    logs = ["A" * 64, "B" * 64, "C" * 64, "D" * 64]  # D: no segments, E: not among the logs
    tables = {
        "io_ops": [(logs[0], t), (logs[1], t.slice(0, 5)), (logs[2], t.slice(10)), ("E" * 64, t)],
        "posix": [(i, d.tables["posix"]) for i in logs + ["E" * 64]],
        "jobs": [(logs[3], d.tables["jobs"])],
    }
    from features import covering_sets, file_rollups

    derive = ingest_tasks.derivers(load_config("local"))
    assert set(derive) == {"covers", "op_patterns", "phases", "file_rollups"}
    assert (
        derive["covers"].inputs == covering_sets.INPUTS
        and derive["file_rollups"].inputs == file_rollups.INPUTS
    )

    def entries():
        return {i: {"row_counts": [], "notes": None} for i in logs}

    got_entries = entries()
    got = ingest_tasks.derive_stacked(logs, tables, derive, got_entries)
    for name, rule in derive.items():
        rows, ids = got[name]
        assert set(ids.to_pylist()) <= set(logs)
        for log_id in logs:
            own = {k: r for k, parts in tables.items() for i, r in parts if i == log_id}
            want = rule(own)
            mine = rows.filter(pa.compute.equal(ids, log_id))
            assert (
                mine.equals(want) and dict(got_entries[log_id]["row_counts"])[name] == want.num_rows
            )
    assert dict(got_entries[logs[3]]["row_counts"]) == {
        "covers": 0,
        "op_patterns": 0,
        "phases": 0,
        "file_rollups": 1,
    }

    def per_log(own):
        if own["io_ops"].num_rows == 5:
            raise ValueError("odd log")
        return derive["phases"](own)

    def stacked(stack, whose):
        raise ValueError("no stack")

    fallback, fb_entries = (
        {"phases": ingest_tasks.Deriver(per_log, stacked, ("io_ops",))},
        entries(),
    )
    rows, ids = ingest_tasks.derive_stacked(logs[:3], tables, fallback, fb_entries)["phases"]
    assert set(ids.to_pylist()) == {logs[0], logs[2]}
    assert rows.equals(got["phases"][0].filter(pa.compute.not_equal(got["phases"][1], logs[1])))
    assert fb_entries[logs[1]]["row_counts"] == [] and "odd log" in fb_entries[logs[1]]["notes"][0]
    assert [dict(fb_entries[i]["row_counts"]) for i in (logs[0], logs[2])] == [
        {"phases": dict(got_entries[i]["row_counts"])["phases"]} for i in (logs[0], logs[2])
    ]


def test_as_decoded_puts_a_tables_columns_in_the_decoded_order_or_fails():
    t = native.decode(_small_log()).tables["io_ops"]
    shuffled = t.select(list(reversed(t.schema.names)))
    assert ingest_tasks.as_decoded("io_ops", t) is t
    assert ingest_tasks.as_decoded("io_ops", shuffled).equals(t)
    with pytest.raises(KeyError):
        ingest_tasks.as_decoded("io_ops", t.drop_columns([t.schema.names[-1]]))


@pytest.mark.slow
def test_a_streamed_dxt_log_lands_whole(spark, tmp_path):
    from iolake.config import load_config
    from iolake.lake import read_table
    from jobs.ingest import run

    segments = 180_001
    data = _big_dxt_log(segments)
    d = native.decode(data)
    assert "io_ops" in d.streams, "the test log must be large enough to be streamed"
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "huge.darshan").write_bytes(data)
    lake = tmp_path / "lake"
    conf = load_config(
        "local", overrides={"lake": {"root": str(lake)}, "gates": {"enabled": False}}
    )
    summary = run(spark, conf, [str(drop)])
    assert summary["status"] == {"ok": 1}
    assert summary["rows"]["io_ops"] == segments
    led = read_table(spark, BRONZE["logs"], str(lake)).collect()[0]
    assert dict(led.row_counts)["io_ops"] == segments
    io_ops = read_table(spark, BRONZE["io_ops"], str(lake)).where(f"log_id = '{led.log_id}'")
    assert io_ops.count() == segments
    want = d.all_tables()["io_ops"]
    got = io_ops.agg({"offset": "sum", "length": "sum", "seq": "max"}).collect()[0].asDict()
    assert got["sum(length)"] == pa.compute.sum(want["length"]).as_py()
    assert got["sum(offset)"] == pa.compute.sum(want["offset"]).as_py()
    assert got["max(seq)"] == pa.compute.max(want["seq"]).as_py()
    # its segments were never all in memory, so ingest left its cover to the covering stage's Spark pass
    assert "covers" not in dict(led.row_counts)
    from jobs import covering

    cover = covering.run(spark, conf, echo=lambda *_: None)
    assert (cover["spark_pass"], cover["from_ingest"], cover["covered"]) == (1, 0, 1)
    # nor its access patterns nor phases: the features and tags stages read its segments themselves
    assert not {"op_patterns", "phases", "file_rollups"} & set(dict(led.row_counts))
    from jobs import features, tags

    feat = features.run(spark, conf, echo=lambda *_: None)
    assert (feat["patterns_spark_pass"], feat["patterns_from_ingest"]) == (1, 0)
    assert (feat["rollups_spark_pass"], feat["rollups_from_ingest"]) == (1, 0)
    assert read_table(spark, SILVER["file_features"], str(lake)).count() > 0
    tagged = tags.run(spark, conf, echo=lambda *_: None)
    assert (tagged["phases_spark_pass"], tagged["phases_from_ingest"]) == (1, 0)


def test_a_decoded_log_waits_for_the_derived_tables_and_a_streamed_one_does_not(tmp_path):
    """The decode task derives (covers, patterns, phases, rollups) for the logs whose segments it holds:
    `_streamed` on a decoded log's ledger counts and tables is what keeps a streamed one out (its io_ops
    counted, on disk, not in memory), so the stages compute its derived tables in Spark."""
    small = native.decode(_small_log())
    assert small.tables["io_ops"].num_rows and not small.streams
    streamed = Decoded(
        tables={k: v for k, v in small.tables.items() if k != "io_ops"},
        format="darshan",
        streams={"io_ops": lambda: iter(small.tables["io_ops"].to_batches())},
    )
    row = {
        "log_id": "a" * 64,
        "source_uri": str(tmp_path / "x.darshan"),
        "size_bytes": 1,
        "mtime_ns": 0,
        "kind": "darshan",
    }

    def stage(table, it, log_id, month):
        path = str(tmp_path / "staging" / table / "part.parquet")
        return ingest_tasks._stage(pafs.LocalFileSystem(), path, path, table, it, log_id, month)

    n_ops = small.tables["io_ops"].num_rows
    for d, in_memory in ((small, True), (streamed, False)):
        dec = types.SimpleNamespace(
            conf=types.SimpleNamespace(max_file_bytes=1 << 30), darshan=lambda path, d=d: d
        )
        entry, tables, staged = ingest_tasks._decode_row(dec, row, "run", 1 << 20, stage)
        counts = dict(entry["row_counts"])
        assert entry["status"] == "ok" and counts["io_ops"] == n_ops
        assert ("io_ops" in tables) is in_memory and bool(staged) is not in_memory
        assert ingest_tasks._streamed(counts, tables) is not in_memory
        assert not {"covers", "op_patterns", "phases", "file_rollups"} & set(
            counts
        )  # none derived yet


def test_derive_chunks_bound_the_bytes_stacked_at_once():
    logs = [f"{k:064d}" for k in range(7)]
    size = {i: 10 for i in logs} | {logs[3]: 11}
    chunks = list(ingest_tasks.derive_chunks(logs, size, limit=20))
    assert [c for chunk in chunks for c in chunk] == logs  # every log once, in order
    assert [len(c) for c in chunks] == [
        2,
        1,
        1,
        2,
        1,
    ]  # log 3 (a little over 10) fits beside no other
    assert list(ingest_tasks.derive_chunks(logs, size, limit=1)) == [[i] for i in logs]
