"""The advise stage's precedents in Spark: `features.advice.assemble` with gold/app_runs gives a tag row
its precedent columns, message and evidence; the rows pass the table's gate and land in a lake whose
gold/tuning_advice was written before the precedent columns existed (the table evolves, its old rows
read null); a what-if message gets the measured figure right after the predicted one. Literal rows;
every expected figure worked out by hand from the throughputs."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pyspark.sql.functions as F
import pytest
from pyspark.sql import types as T

from features import advice, precedents
from iolake.config import load_config
from schemas import GOLD
from tests.support.frames import frame

KIB, MIB = 1 << 10, 1 << 20
# J and C1 ran with 64 KiB transfers (100, 120 MiB/s: baseline median 110); P1 and P2 with 4 MiB
# (220, 165: ratios 2.0 and 1.5, median 1.75); O1 is another executable (1,000 MiB/s, not counted)
RUNS = {
    "J": ("sim", 64 * KIB, 100.0),
    "C1": ("sim", 64 * KIB, 120.0),
    "P1": ("sim", 4 * MIB, 220.0),
    "P2": ("sim", 4 * MIB, 165.0),
    "O1": ("post", 4 * MIB, 1000.0),
}


def _lake(spark):
    t0 = dt.datetime(2026, 1, 1)
    ff = jf = runs = None
    for i, (log_id, (exe, size, bw)) in enumerate(RUNS.items()):
        f = frame(
            spark,
            "file_features",
            [
                {
                    "record_id": 1,
                    "file_name": "/scratch/out.h5",
                    "mount_point": "/scratch",
                    "tier": "pfs",
                    "interface": "MPI-IO",
                    "nprocs": 8,
                    "n_ranks": 8,
                    "file_per_process": False,
                    "unique_dir": False,
                    "collective": False,
                    "file_view": False,
                    "fsync": False,
                    "fsync_per_write": False,
                    "preallocate": False,
                    "transfer_size": size,
                    "opens": 8,
                    "reads": 0,
                    "writes": 64,
                    "io_type": "WO",
                    "io_type_source": "counters",
                    "random_access": False,
                    "bytes_read": 0,
                    "bytes_written": 64 * size,
                    "bandwidth_mib_s": bw,
                },
                {  # a standard stream moving fewer bytes: not the busiest data file
                    "record_id": 2,
                    "file_name": "<STDOUT>",
                    "tier": "pfs",
                    "interface": "STDIO",
                    "n_ranks": 1,
                    "file_per_process": True,
                    **dict.fromkeys(("unique_dir", "collective", "file_view", "fsync"), False),
                    **dict.fromkeys(("fsync_per_write", "preallocate", "random_access"), False),
                    "transfer_size": 100,
                    "opens": 1,
                    "reads": 0,
                    "writes": 1,
                    "io_type": "WO",
                    "io_type_source": "counters",
                    "bytes_read": 0,
                    "bytes_written": 100,
                },
            ],
            log_id=log_id,
        )
        j = frame(
            spark,
            "job_features",
            [
                {
                    "program": exe,
                    "uid": 7,
                    "nprocs": 8,
                    "start_time": t0 + dt.timedelta(hours=i),
                    "file_count": 1,
                    "shared_file_count": 1,
                    "read_requests": 0,
                    "write_requests": 64,
                    "bytes_read": 0,
                    "bytes_written": 64 * size,
                    "throughput_mib_s": bw,
                    "tiers": ["pfs"],
                    "suspect": False,
                }
            ],
            log_id=log_id,
        )
        r = frame(
            spark,
            "app_runs",
            [
                {
                    "app": f"{exe}|7|8-31|/scratch|write|shared",
                    "exe": exe,
                    "uid": 7,
                    "nprocs": 8,
                    "nprocs_bucket": "8-31",
                    "fs": "/scratch",
                    "direction": "write",
                    "layout": "shared",
                    "start": t0 + dt.timedelta(hours=i),
                    "bandwidth_mib_s": bw,
                    "bytes": 64 * size,
                }
            ],
            log_id=log_id,
        )
        ff = f if ff is None else ff.unionByName(f)
        jf = j if jf is None else jf.unionByName(j)
        runs = r if runs is None else runs.unionByName(r)
    tags = frame(
        spark,
        "bottleneck_tags",
        [
            {
                "tag": "small_writes",
                "severity": "high",
                "metric": "small_write_share",
                "value": 0.9,
                "threshold_name": "tags.small_requests",
                "threshold": 0.5,
                "evidence": [],
                "message": "90% of writes are small",
            }
        ],
        log_id="J",
    )
    return ff, jf, runs, tags


def test_assembled_tag_row_has_its_precedent_and_an_old_table_evolves(spark, tmp_path):
    from iolake.lake import read_table
    from iolake.lake.delta import ensure_table
    from iolake.lake.writer import write

    conf = load_config("local", overrides={"lake": {"root": str(tmp_path / "lake")}})
    ff, jf, runs, tags = _lake(spark)
    todo = jf.where("log_id = 'J'").select("log_id", "job_month")
    rows = advice.assemble(spark, conf, todo, ff, tags, jf, ff, None, None, runs)
    out = advice.finish(rows, "none")
    got = {(r.kind, r.item): r for r in out.collect()}
    assert set(got) == {("tag", "small_writes")}
    t = got["tag", "small_writes"]
    assert t.precedent_speedup == pytest.approx(1.75)
    assert (t.precedent_runs, t.precedent_setting) == (2, "4 MiB transfers")
    assert (t.precedent_low, t.precedent_high) == (pytest.approx(1.5), pytest.approx(2.0))
    assert t.message.endswith(
        " (measured 1.75x over 2 runs of this application with 4 MiB transfers)"
    )
    assert t.evidence[-1] == (
        "precedent: 2 runs of this application with 4 MiB transfers ran at a median 1.75x "
        "(min 1.50x, max 2.00x) the median throughput of this job's 2 comparable runs (110.0 MiB/s)"
    )

    # a lake advised before the precedent columns existed: its table lacks them
    spec = GOLD["tuning_advice"]
    old = T.StructType([f for f in spec.struct.fields if f.name not in precedents.OUT_COLUMNS])
    old_row = (
        out.withColumn("log_id", F.lit("OLD"))
        .withColumn("item", F.lit("metadata_heavy"))
        .select(*old.fieldNames())
    )
    ensure_table(spark, dataclasses.replace(spec, struct=old), conf.lake.root)
    spark.createDataFrame(old_row.collect(), old).write.format("delta").mode("append").save(
        spec.path(conf.lake.root)
    )
    assert "precedent_speedup" not in read_table(spark, spec, conf.lake.root).columns
    write(spark, conf, spec, out)  # the advise stage's write: gate, then an insert-only MERGE
    back = {r.log_id: r for r in read_table(spark, spec, conf.lake.root).collect()}
    assert set(back) == {"OLD", "J"}
    assert back["OLD"].precedent_speedup is None and back["OLD"].precedent_runs is None
    assert back["J"].precedent_speedup == pytest.approx(1.75)


def test_without_app_runs_the_precedent_columns_are_null_and_messages_unchanged(spark):
    conf = load_config("local")
    ff, jf, _, tags = _lake(spark)
    todo = jf.where("log_id = 'J'").select("log_id", "job_month")
    r = advice.finish(advice.assemble(spark, conf, todo, ff, tags, jf, ff), "none").first()
    assert r.precedent_speedup is None and r.precedent_setting is None
    assert "measured" not in r.message and not any("precedent" in e for e in r.evidence)


def test_what_if_message_gives_the_measured_figure_beside_the_predicted_one(spark):
    conf = load_config("local")
    ff, jf, runs, _ = _lake(spark)
    cols = [f for f in GOLD["tuning_advice"].struct.fields]
    keep = [
        f for f in cols if f.name not in (*precedents.OUT_COLUMNS, "advised_with", "advised_at")
    ]
    row = dict.fromkeys(f.name for f in keep)
    row.update(
        log_id="J",
        job_month="2024-01",
        kind="what_if",
        item="1",
        record_id=1,
        current="MPI-IO, shared file, 64 KiB transfers, on pfs",
        advised="MPI-IO, shared file, 4 MiB transfers, on pfs",
        predicted_speedup=2.1,
        evidence=[],
        message="predicted 2.10x faster (100.0 -> 210.0 MiB/s): issue 4 MiB requests — /scratch/out.h5",
    )
    rows = spark.createDataFrame([tuple(row[f.name] for f in keep)], T.StructType(keep))
    todo = jf.where("log_id = 'J'").select("log_id", "job_month")
    hist = precedents.history_for(todo, runs, jf, ff, list(conf.watch.key_parts))
    # only the application's runs: O1 (another executable) is not read
    assert {r.log_id for r in hist.collect()} == {"J", "C1", "P1", "P2"}
    out = precedents.attach(rows, hist, conf.watch.key_parts, advice.TAG_DIMENSION).first()
    assert out.message == (
        "predicted 2.10x faster (100.0 -> 210.0 MiB/s); measured 1.75x over 2 runs of this "
        "application with 4 MiB transfers: issue 4 MiB requests — /scratch/out.h5"
    )
