"""Ingest into bronze Delta tables: ledger, exactly-once under re-runs, kills and concurrent runs."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iolake.config import load_config
from iolake.lake import GateFailed, read_table, table_version
from jobs.ingest import plan_tasks, run
from schemas import BRONZE, DECODED_TABLES
from tests.support.data import ROOT, shared_path
from tests.support.lakes import conf_dir_with

pytestmark = pytest.mark.slow

# Subsets of the shared corpus for the subprocess tests: readable, partial, 2.x and bzip2 logs.
SUBSET_A = ["darshan-logs/darshan_logs/release_logs", "converted-bzip2"]
DXT_EXAMPLE = "darshan/darshan-util/pydarshan/darshan/examples/example_logs/dxt.darshan"
SUBSET_B = [
    "converted-bzip2",
    "darshan-logs/darshan_logs/partial_data_stdio",
    "darshan/darshan-test/2.x/perf",
]


def _conf(lake: Path):
    return load_config("local", overrides={"lake": {"root": str(lake)}})


def _plain(v):
    """One Python shape for nested values, whichever of Spark or Arrow produced them."""
    import numpy as np
    from pyspark.sql import Row

    if isinstance(v, Row):
        return {k: _plain(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):  # Arrow's map
            return {k: _plain(x) for k, x in v}
        return [_plain(x) for x in v]
    return v


def _normalized(pdf):
    for c in pdf.columns:
        if pdf[c].dtype == object:
            pdf[c] = pdf[c].map(_plain)
    return pdf


def _frames(spark, lake: Path, log_ids=None) -> dict:
    """Every bronze table as a sorted pandas frame (ingest bookkeeping columns dropped)."""
    out = {}
    for name, spec in BRONZE.items():
        if table_version(spark, spec, str(lake)) is None:
            out[name] = None
            continue
        df = read_table(spark, spec, str(lake))
        if log_ids is not None:
            df = df.where(df.log_id.isin(list(log_ids)))
        drop = [
            c
            for c in ("ingest_run_id", "ingested_at", "decode_s", "mtime_ns", "source_uri")
            if c in df.columns
        ]
        pdf = df.drop(*drop).toPandas()
        keys = [k for k in spec.keys if k in pdf.columns]
        out[name] = _normalized(pdf.sort_values(keys).reset_index(drop=True))
    return out


def _assert_same_tables(a: dict, b: dict) -> None:
    import pandas as pd

    for name in BRONZE:
        fa, fb = a[name], b[name]
        if fa is None or fb is None:
            assert (fa is None or len(fa) == 0) and (fb is None or len(fb) == 0), name
            continue
        pd.testing.assert_frame_equal(fa, fb, obj=name, check_dtype=False)


@pytest.fixture(scope="module")
def corpus_lake(spark, tmp_path_factory):
    root = shared_path("darshan")
    lake = tmp_path_factory.mktemp("corpus") / "lake"
    summary = run(spark, _conf(lake), [str(root)])
    return lake, summary


def test_plan_tasks_cuts_log_id_order_heaviest_first():
    """Decision 0037: consecutive log_id runs under the byte and log limits, heaviest bin first.
    Hand-cut: in log_id order a90 | b60 | c50+d40 (e would make 3 logs) | e10 | f500 (alone)."""
    sizes = {"c": 50, "f": 500, "a": 90, "e": 10, "b": 60, "d": 40}
    logs = [{"log_id": i, "source_uri": f"u{i}", "size_bytes": s} for i, s in sizes.items()]
    bins = plan_tasks(logs, task_bytes=100, task_max_logs=2)
    # loads 500, 90, 90, 60, 10: the two 90s in log_id order
    assert [[x["log_id"] for x in b] for b in bins] == [["f"], ["a"], ["c", "d"], ["b"], ["e"]]
    # a small batch is still spread over at least `min_tasks` tasks, in consecutive runs
    small = [
        {"log_id": f"{i:02d}", "source_uri": f"s{i}", "size_bytes": 10}
        for i in (7, 3, 0, 5, 1, 6, 2, 4)
    ]
    assert len(plan_tasks(small, task_bytes=10**9, task_max_logs=2000)) == 1
    spread = plan_tasks(small, task_bytes=10**9, task_max_logs=2000, min_tasks=4)
    assert [[x["log_id"] for x in b] for b in spread] == [
        ["00", "01"],
        ["02", "03"],
        ["04", "05"],
        ["06", "07"],
    ]


def test_plan_tasks_keeps_a_month_together():
    """Decision 0052: the logs in (month_hint, log_id) order, no hint first. Hand-cut, two logs a
    bin: e (no hint) b | d f (2025-01) | a c (2025-02), equal loads so in that order."""
    hints = {"a": "2025-02", "b": "2025-01", "c": "2025-02", "d": "2025-01", "e": None}
    logs = [
        {"log_id": i, "source_uri": f"u{i}", "size_bytes": 10, "month_hint": m}
        for i, m in {**hints, "f": "2025-01"}.items()
    ]
    bins = plan_tasks(logs, task_bytes=10**9, task_max_logs=2)
    assert [[x["log_id"] for x in b] for b in bins] == [["e", "b"], ["d", "f"], ["a", "c"]]


def test_a_drop_over_many_months_stages_few_files_a_table(corpus_lake):
    """Decision 0052: a task's logs share a month, so each table gets at most one file per task
    and month boundary (the shared corpus spans more months than it has decode tasks; ordered by
    log_id alone, each task wrote a file for most months)."""
    from deltalake import DeltaTable

    lake, summary = corpus_lake
    files = DeltaTable(str(lake / "bronze" / "jobs")).get_add_actions().column("path").to_pylist()
    months = {f.split("/")[0] for f in files}
    assert len(months) > 2 * summary["tasks"]
    assert len(files) <= summary["tasks"] + len(months) - 1


@pytest.mark.parametrize(
    ("task_bytes", "task_max_logs", "min_tasks"),
    [(10**9, 2000, 1), (2**20, 2000, 1), (2**20, 7, 1), (10**9, 2000, 4), (2**18, 50, 16)],
)
def test_plan_tasks_bins_are_consecutive_bounded_and_lose_no_log(
    task_bytes, task_max_logs, min_tasks
):
    import hashlib
    import random

    rng = random.Random(task_bytes + task_max_logs + min_tasks)
    logs = [
        {
            "log_id": hashlib.sha256(str(k).encode()).hexdigest(),
            "source_uri": f"f{k}",
            "size_bytes": int(10 ** rng.uniform(2, 6.5)),  # 100 B to about 3 MiB
        }
        for k in range(500)
    ]
    bins = plan_tasks(logs, task_bytes, task_max_logs, min_tasks)
    loads = [sum(x["size_bytes"] for x in b) for b in bins]
    assert loads == sorted(loads, reverse=True)  # the heaviest task first
    assert sorted(x["log_id"] for b in bins for x in b) == sorted(x["log_id"] for x in logs)
    ranges = sorted((min(x["log_id"] for x in b), max(x["log_id"] for x in b)) for b in bins)
    assert all(hi < lo for (_, hi), (lo, _) in zip(ranges, ranges[1:]))  # disjoint runs
    assert all([x["log_id"] for x in b] == sorted(x["log_id"] for x in b) for b in bins)
    assert len(bins) >= min_tasks
    total = sum(x["size_bytes"] for x in logs)
    cap_bytes = min(task_bytes, -(-total // min_tasks))  # the min_tasks rule, as documented
    cap_logs = min(task_max_logs, -(-len(logs) // min_tasks))
    for b, load in zip(bins, loads):
        assert len(b) <= cap_logs and (load <= cap_bytes or len(b) == 1)
    # each bin is as long as the limits allow: the next log in log_id order would break one
    order = sorted(logs, key=lambda x: x["log_id"])
    after = {x["log_id"]: y for x, y in zip(order, order[1:])}
    for b, load in zip(bins, loads):
        nxt = after.get(b[-1]["log_id"])
        if nxt is not None:
            assert len(b) == cap_logs or load + nxt["size_bytes"] > cap_bytes


def _expected(row: dict, decoder: str) -> tuple[set, str | None]:
    """(allowed statuses, reason fragment) of a manifest log under a decoder."""
    if row["pydarshan_3_5_0"] == "reads":
        return {"ok", "partial"}, None
    if row["path"].endswith(".gz") or "2.x" in row["path"] or "example-output/carns" in row["path"]:
        return {"quarantined"}, "unsupported format 2.x"
    if row["pydarshan_3_5_0"].startswith("opens, bad header"):
        # libdarshan-util chokes on some of these before our header check sees them
        return {"quarantined"}, (
            "bad header" if decoder == "native" else ("bad header", "decoder error")
        )
    if "bzip2" in row["pydarshan_error"]:
        return ({"ok"}, None) if decoder == "native" else ({"quarantined"}, "bzip2")
    if "snyders_ior-POSIX" in row["path"]:  # segfaults libdarshan-util; its header is garbage too
        return {"quarantined"}, ("bad header" if decoder == "native" else "decoder crash")
    raise AssertionError(f"manifest row not classified: {row['path']}")


def _check_ledger(spark, lake: Path, decoder: str, subset: str = "") -> int:
    root = shared_path("darshan")
    manifest = [
        r for r in csv.DictReader(open(root / "MANIFEST.csv")) if r["path"].startswith(subset)
    ]
    by_path = read_table(spark, BRONZE["logs"], str(lake)).toPandas().set_index("source_uri")
    assert len(by_path) == len(manifest)
    for r in manifest:
        row = by_path.loc[str(root / r["path"])]
        statuses, reason = _expected(r, decoder)
        assert row.status in statuses, (r["path"], row.status, row.reason)
        if reason:
            assert any(
                x in row.reason for x in ((reason,) if isinstance(reason, str) else reason)
            ), (r["path"], row.reason)
    return int((by_path.status == "quarantined").sum())


def test_ingest_ledger_matches_manifest(spark, corpus_lake):
    lake, summary = corpus_lake
    quarantined = _check_ledger(spark, lake, "native")
    assert summary["status"]["quarantined"] == quarantined
    led = read_table(spark, BRONZE["logs"], str(lake)).toPandas()
    # every log whose header says nprocs ~ 4e18 is caught by the header check
    manifest = list(csv.DictReader(open(shared_path("darshan") / "MANIFEST.csv")))
    bad = sum(_expected(r, "native")[1] == "bad header" for r in manifest)
    assert bad == 7
    assert (
        led.reason.fillna("").str.contains("bad header: nprocs=4427712942739450220")
    ).sum() == bad
    assert set(led.decoder.dropna()) == {"iolake-native-0.1.0"}


def test_ingest_ledger_carries_each_logs_jobid_as_its_file_name_says(spark, corpus_lake):
    """Darshan names a log <user>_<exe>_id<jobid>-...: the ledger's jobid is that number for every
    decoded log so named (the bad-header logs aside: their header words are garbage), equals
    bronze/jobs', is null for quarantined logs, and the new ledger says its jobids are filled."""
    import re

    from delta.tables import DeltaTable

    from schemas.logs import JOBID_FILLED

    lake, _ = corpus_lake
    led = read_table(spark, BRONZE["logs"], str(lake)).toPandas()
    named = 0
    for r in led[led.status != "quarantined"].itertuples():
        m = re.search(r"_id(\d+)[-_]", Path(r.source_uri).name)
        if m and r.format == "darshan":
            assert r.jobid == int(m.group(1)), (r.source_uri, r.jobid)
            named += 1
    assert named >= 40  # 44 distinct decoded logs of the shared corpus are so named
    jobs = read_table(spark, BRONZE["jobs"], str(lake)).select("log_id", "jobid").toPandas()
    both = led.merge(jobs, on="log_id", suffixes=("", "_jobs"))
    assert len(both) == (led.status != "quarantined").sum()
    assert (both.jobid.fillna(-1) == both.jobid_jobs.fillna(-1)).all()
    assert led[led.status == "quarantined"].jobid.isna().all()
    props = DeltaTable.forPath(spark, BRONZE["logs"].path(str(lake))).detail().first()
    assert props["properties"].get(JOBID_FILLED) == "true"


def test_ingest_fills_the_jobids_of_a_ledger_written_without_them(spark, tmp_path):
    """A lake whose ledger predates the column (its rows and no property): the next ingest adds
    the column, fills every decoded log's jobid from bronze/jobs, sets the property; the report
    finds a job by its jobid before (through bronze/jobs) and after (through the ledger)."""
    import shutil

    import pyspark.sql.functions as F
    from delta.tables import DeltaTable

    from apps.report import LakeReader, find_job
    from schemas.logs import JOBID_FILLED

    examples = shared_path("darshan") / DXT_EXAMPLE.rsplit("/", 1)[0]
    first, later = tmp_path / "first", tmp_path / "later"
    first.mkdir()
    later.mkdir()
    for name in ("dxt.darshan", "noposix.darshan"):
        shutil.copy(examples / name, first / name)
    shutil.copy(examples / "example.darshan", later / "example.darshan")
    lake = tmp_path / "lake"
    conf = _conf(lake)
    run(spark, conf, [str(first)], echo=lambda *_: None)
    # the same ledger as a lake of before the column: its rows without jobid, no property
    path = BRONZE["logs"].path(str(lake))
    kept = str(tmp_path / "ledger.parquet")
    spark.read.format("delta").load(path).drop("jobid").write.parquet(kept)
    shutil.rmtree(path)
    spark.read.parquet(kept).write.format("delta").save(path)
    assert "jobid" not in spark.read.format("delta").load(path).columns
    jobs = read_table(spark, BRONZE["jobs"], str(lake)).select("log_id", "jobid").collect()
    want = {r.log_id: r.jobid for r in jobs}
    dxt_id = next(i for i, j in want.items() if j is not None)

    reader = LakeReader(conf)
    assert find_job(reader, str(want[dxt_id])) == dxt_id  # through bronze/jobs

    lines = []
    run(spark, conf, [str(later)], echo=lines.append)
    assert any("the ledger's jobid: 2 rows filled" in x for x in lines), lines
    led = spark.read.format("delta").load(path)
    got = {r.log_id: r.jobid for r in led.where(F.col("status") != "quarantined").collect()}
    assert {i: got[i] for i in want} == want and len(got) == 3 and None not in got.values()
    detail = DeltaTable.forPath(spark, path).detail().first()
    assert detail["properties"].get(JOBID_FILLED) == "true"
    reader = LakeReader(conf)
    assert find_job(reader, str(want[dxt_id])) == dxt_id  # through the ledger
    # the next run finds nothing to fill and says nothing of it
    lines = []
    run(spark, conf, [str(later)], echo=lines.append)
    assert not any("jobid" in x for x in lines), lines


def test_ingest_pydarshan_decoder_quarantines_what_it_cannot_read(spark, tmp_path):
    """The reference decoder in its sandbox: the segfaulting log and bzip2 logs quarantined, run goes on."""
    root = shared_path("darshan")
    sub = "darshan-history/darshan-util/pydarshan/darshan/examples/example_logs"
    lake = tmp_path / "lake"
    conf = load_config(
        "local", overrides={"lake": {"root": str(lake)}, "ingest": {"decoder": "pydarshan"}}
    )
    run(spark, conf, [str(root / sub)])
    _check_ledger(spark, lake, "pydarshan", sub)
    led = read_table(spark, BRONZE["logs"], str(lake)).toPandas()
    assert led.reason.fillna("").str.contains("SIGSEGV").sum() == 1


def test_ingest_rows_equal_the_decoder_output(spark, corpus_lake):
    import pandas as pd

    from jobs.ingest_tasks import derivers
    from readers.native_darshan import decode

    lake, _ = corpus_lake
    root = shared_path("darshan")
    picks = [
        root / "darshan/darshan-util/pydarshan/darshan/examples/example_logs/dxt.darshan",
        root / "darshan-logs/darshan_logs/release_logs",
    ]
    paths = [p for p in picks[:1]] + sorted(picks[1].glob("*.darshan"))[:3]
    ledger = read_table(spark, BRONZE["logs"], str(lake)).select("log_id", "source_uri").toPandas()
    for path in paths:
        log_id = ledger.loc[ledger.source_uri == str(path), "log_id"].iloc[0]
        decoded = decode(str(path)).tables
        # ingest's per-log results (cover, access patterns, phases), each from the decoded tables
        decoded = {**decoded, **{t: fn(decoded) for t, fn in derivers(_conf(lake)).items()}}
        for name in DECODED_TABLES:
            spec = BRONZE[name]
            got = (
                read_table(spark, spec, str(lake))
                .where(f"log_id = '{log_id}'")
                .drop("log_id", "job_month")
                .toPandas()
            )
            want = decoded[name].to_pandas() if name in decoded else got.iloc[0:0]
            keys = [k for k in spec.keys if k in want.columns]
            pd.testing.assert_frame_equal(
                _normalized(got.sort_values(keys).reset_index(drop=True)),
                _normalized(want.sort_values(keys).reset_index(drop=True)),
                check_dtype=False,
                obj=f"{path.name}:{name}",
            )


def test_ingest_second_run_adds_nothing(spark, corpus_lake):
    lake, _ = corpus_lake
    before = {n: table_version(spark, s, str(lake)) for n, s in BRONZE.items()}
    summary = run(spark, _conf(lake), [str(shared_path("darshan"))])
    assert summary["new"] == 0
    after = {n: table_version(spark, s, str(lake)) for n, s in BRONZE.items()}
    assert after == before


def test_ingest_commits_carry_run_id_git_sha_and_config(spark, corpus_lake):
    import json

    from delta.tables import DeltaTable

    lake, summary = corpus_lake
    hist = DeltaTable.forPath(spark, BRONZE["posix"].path(str(lake))).history().collect()
    metas = [json.loads(h.userMetadata) for h in hist if h.userMetadata]
    assert any(
        m["run_id"] == summary["run_id"] and m["stage"] == "ingest" and m["config"] for m in metas
    )


def test_ingest_commits_touch_only_the_batch_months(spark, corpus_lake):
    """Each bronze commit adds the staged files of the batch's job_months, as they were staged: one
    Delta WRITE per table whose files sit in their month's partition, with their row counts (the
    tasks' statistics) summing to the table's rows; nothing is written twice."""
    import json

    lake, _ = corpus_lake
    ledger_months = {
        r.job_month for r in read_table(spark, BRONZE["logs"], str(lake)).collect() if r.job_month
    }
    for name in ("posix", "io_ops"):
        spec = BRONZE[name]
        logs = sorted(Path(spec.path(str(lake)), "_delta_log").glob("*.json"))
        actions = [
            json.loads(line) for f in logs for line in f.read_text().splitlines() if line.strip()
        ]
        ops = [a["commitInfo"]["operation"] for a in actions if "commitInfo" in a]
        assert "MERGE" not in ops and ops.count("WRITE") == 1, (name, ops)
        adds = [a["add"] for a in actions if "add" in a]
        months = {a["partitionValues"]["job_month"] for a in adds}
        assert all(
            a["path"].startswith(f"job_month={a['partitionValues']['job_month']}/") for a in adds
        ), name
        df = read_table(spark, spec, str(lake))
        in_table = {r.job_month for r in df.select("job_month").distinct().collect()}
        assert in_table == months and months <= ledger_months, (name, months, in_table)
        assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == df.count(), name


def test_point_read_of_one_log_opens_one_staged_file_per_table(spark, corpus_lake):
    """Decision 0037: the decode tasks take consecutive log_id runs and write their logs in log_id
    order, so the staged files of a table-month that hold several logs cover disjoint log_id ranges:
    a log lies in the min/max range (the add action's statistics) of at most one of them, plus its
    own file when its io_ops were streamed (a file of that log alone), however many tasks ran."""
    import json

    lake, summary = corpus_lake
    assert summary["tasks"] >= 4  # min_tasks: 2 x the cores of local[2]
    busiest = 0
    for name in ("posix", "io_ops", "files"):
        spec = BRONZE[name]
        adds = [
            json.loads(line)["add"]
            for f in sorted(Path(spec.path(str(lake)), "_delta_log").glob("*.json"))
            for line in f.read_text().splitlines()
            if '"add"' in line
        ]
        if name == "posix":  # statistics of the keys only (decision 0049), not of 32 columns
            assert {
                frozenset(json.loads(a["stats"])[k])
                for a in adds
                for k in ("minValues", "nullCount")
            } == {frozenset({"log_id", "record_id", "rank"})}
        ranges = [
            (
                a["partitionValues"]["job_month"],
                json.loads(a["stats"])["minValues"]["log_id"],
                json.loads(a["stats"])["maxValues"]["log_id"],
            )
            for a in adds
        ]
        per_month: dict = {}
        for m, _, _ in ranges:
            per_month[m] = per_month.get(m, 0) + 1
        busiest = max(busiest, *per_month.values())
        logs = read_table(spark, spec, str(lake)).select("log_id", "job_month").distinct()
        for r in logs.collect():
            covering = [
                (lo, hi) for m, lo, hi in ranges if m == r.job_month and lo <= r.log_id <= hi
            ]
            shared = [c for c in covering if c[0] < c[1]]
            assert 1 <= len(covering) <= 2 and len(shared) <= 1, (name, r.log_id, covering)
    assert busiest >= 2  # some table-month has several files a point read can now skip


def _ingest_cmd(lake: Path, inputs: list[str]) -> list[str]:
    """`python -m jobs.ingest INPUTS --lake LAKE` in a JVM of its own, the shipped conf but C1-only
    (`tests.support.lakes.QUICK_JIT`), written beside the lake."""
    conf = lake.parent / "conf-quick-jit"
    if not conf.exists():
        conf_dir_with(conf, quick_jit=True)
    return [
        sys.executable,
        "-m",
        "jobs.ingest",
        *inputs,
        "--lake",
        str(lake),
        "--conf-dir",
        str(conf),
    ]


def _env(**extra):
    env = dict(os.environ)
    env.update({"PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1", **extra})
    return env


def _log_ids(spark, lake: Path, inputs: list[str]) -> set:
    led = read_table(spark, BRONZE["logs"], str(lake)).toPandas()
    return {r.log_id for r in led.itertuples() if any(r.source_uri.startswith(i) for i in inputs)}


def test_ingest_killed_between_commits_then_rerun_equals_clean_run(spark, corpus_lake, tmp_path):
    root = shared_path("darshan")
    inputs = [str(root / p) for p in SUBSET_A]
    lake = tmp_path / "lake"
    killed = subprocess.run(
        _ingest_cmd(lake, inputs),
        env=_env(IOLAKE_FAULT="after-merge:posix"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert table_version(spark, BRONZE["posix"], str(lake)) is not None  # posix committed...
    assert table_version(spark, BRONZE["logs"], str(lake)) is None  # ...but no log is marked done
    # the re-run in this process (the killed one needed its own, to be killed): the same code
    # path as `jobs.ingest`, without a second JVM start
    run(spark, _conf(lake), inputs)
    clean_lake, _ = corpus_lake
    ids = _log_ids(spark, clean_lake, inputs)
    _assert_same_tables(_frames(spark, lake), _frames(spark, clean_lake, ids))


def test_one_at_a_time_in_small_row_groups_equals_the_defaults(
    spark, corpus_lake, tmp_path, monkeypatch
):
    """`ingest.commit_threads`, `ingest.row_group_rows` and `ingest.ledger_sort_rows`: the
    module's lake committed its tables four at a time in row groups of 131,072 rows (the
    defaults); one table at a time in row groups of 1,000 rows gives the same rows and the ledger
    the same logs, every staged file's row groups hold at most 1,000 rows, and the rows of a log
    with 7,623 DXT segments (pydarshan's `dxt.darshan`), read through delta-rs, are the same. With
    `ledger_sort_rows` 1 (and sorted row groups of 2 rows) the ingest ends by sorting its ledger:
    the same rows, in log_id order, no row group over 2 rows."""
    import pandas as pd
    import pyarrow.parquet as pq

    from iolake.lake import arrow, layout

    monkeypatch.setattr(layout, "ROW_GROUP_ROWS", 2)

    clean_lake, _ = corpus_lake
    defaults = load_config("local").ingest
    assert (defaults.commit_threads, defaults.row_group_rows) == (4, 131072)
    inputs = [str(shared_path("darshan") / p) for p in [*SUBSET_A, DXT_EXAMPLE]]
    lake = tmp_path / "lake"
    conf = load_config(
        "local",
        overrides={
            "lake": {"root": str(lake)},
            "ingest": {"commit_threads": 1, "row_group_rows": 1000, "ledger_sort_rows": 1},
        },
    )
    assert (conf.ingest.commit_threads, conf.ingest.row_group_rows) == (1, 1000)
    assert load_config("local").ingest.ledger_sort_rows == 100_000
    said: list[str] = []
    run(spark, conf, inputs, echo=said.append)
    assert any(line.startswith("[ingest] ledger sorted by log_id: ") for line in said), said
    ledger_ids, ledger_groups = [], []
    for f in map(pq.ParquetFile, sorted(arrow.open_table(lake, BRONZE["logs"]).file_uris())):
        for i in range(f.metadata.num_row_groups):
            ledger_groups.append(f.metadata.row_group(i).num_rows)
            ledger_ids += f.read_row_group(i, ["log_id"])["log_id"].to_pylist()
    assert max(ledger_groups) <= 2 and len(ledger_groups) > 1
    assert ledger_ids == sorted(ledger_ids)  # one file here: one sorted run
    ids = _log_ids(spark, clean_lake, inputs)
    assert ids and _log_ids(spark, lake, inputs) == ids
    _assert_same_tables(_frames(spark, lake), _frames(spark, clean_lake, ids))

    groups = [
        [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)]
        for f in map(pq.ParquetFile, sorted((lake / "bronze" / "io_ops").rglob("*.parquet")))
    ]
    assert groups and max(max(g) for g in groups) <= 1000
    assert any(len(g) > 1 for g in groups)  # the setting was applied, not merely never reached
    counts = arrow.read(lake, BRONZE["io_ops"], ["log_id"]).to_pandas()["log_id"].value_counts()
    biggest = counts.index[0]  # the log with the most rows: over several row groups
    mine = arrow.read_logs(lake, BRONZE["io_ops"], biggest).to_pandas()
    theirs = arrow.read_logs(clean_lake, BRONZE["io_ops"], biggest).to_pandas()
    keys = [k for k in BRONZE["io_ops"].keys if k in mine.columns]
    assert len(mine) > 1000
    pd.testing.assert_frame_equal(
        mine.sort_values(keys).reset_index(drop=True),
        theirs.sort_values(keys).reset_index(drop=True),
    )


def test_concurrent_ingests_of_overlapping_inputs_add_no_duplicates(spark, corpus_lake, tmp_path):
    root = shared_path("darshan")
    a = [str(root / p) for p in SUBSET_A]
    b = [str(root / p) for p in SUBSET_B]
    lake = tmp_path / "lake"
    procs = [
        subprocess.Popen(
            _ingest_cmd(lake, x),
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for x in (a, b)
    ]
    for p in procs:
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0, err[-3000:]
    clean_lake, _ = corpus_lake
    ids = _log_ids(spark, clean_lake, a + b)
    got = _frames(spark, lake)
    for name, spec in BRONZE.items():
        if got[name] is not None:
            keys = [k for k in spec.keys if k in got[name].columns]
            assert not got[name].duplicated(keys).any(), name
    _assert_same_tables(got, _frames(spark, clean_lake, ids))


def test_gate_failure_names_expectation_and_rows(spark):
    from iolake.gates import validate

    spec = BRONZE["files"]
    rows = [("a" * 64, "2020-01", 1, "/x", None, None), ("a" * 64, "2020-01", 1, "/y", None, None)]
    df = spark.createDataFrame(rows, spec.struct)
    with pytest.raises(GateFailed) as e:
        validate(spec, df)
    msg = str(e.value)
    assert (
        "bronze.files" in msg
        and "compound_columns_to_be_unique" in msg
        and "2 offending rows" in msg
    )
    ok = spark.createDataFrame(rows[:1], spec.struct)
    validate(spec, ok)  # a clean frame passes


def test_cli_bad_config_exits_2_naming_key(tmp_path, capsys):
    from iolake.cli import main

    base = (
        (ROOT / "conf" / "base.yaml")
        .read_text()
        .replace("\ningest:\n", "\ningest:\n  workers: 3\n", 1)
    )
    (tmp_path / "base.yaml").write_text(base)
    assert main(["ingest", str(tmp_path), "--conf-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "base.yaml: ingest.workers: unknown key" in err


def test_spark_submit_runs_the_ingest_job(spark, tmp_path):
    import darshan
    from pyspark import find_spark_home

    from iolake.spark import DELTA_PACKAGE

    samples = Path(darshan.__file__).parent / "examples" / "example_logs"
    lake = tmp_path / "lake"
    submit = Path(find_spark_home._find_spark_home()) / "bin" / "spark-submit"
    cmd = [
        str(submit),
        "--master",
        "local[2]",
        "--packages",
        DELTA_PACKAGE,
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--conf",
        "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
        "--conf",
        "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog",
        str(ROOT / "jobs" / "ingest.py"),
        str(samples),
        "--lake",
        str(lake),
    ]
    env = _env(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "logs: ok 6" in res.stdout
    assert read_table(spark, BRONZE["jobs"], str(lake)).count() == 6


def test_ingest_recorder_folders_as_logs_and_quarantines_a_corrupt_one(spark, tmp_path):
    import shutil

    src = shared_path("recorder")
    bad = tmp_path / "traces" / "broken"
    shutil.copytree(src / "recorder-simple", bad)
    (bad / "0.itf").write_bytes((bad / "0.itf").read_bytes()[:7])  # truncated rank file
    lake = tmp_path / "lake"
    summary = run(spark, _conf(lake), [str(src), str(tmp_path / "traces")])
    assert summary["new"] == 3
    led = read_table(spark, BRONZE["logs"], str(lake)).toPandas().set_index("source_uri")
    assert set(led.loc[[str(src / "recorder-ior"), str(src / "recorder-simple")], "status"]) == {
        "ok"
    }
    assert led.loc[str(bad), "status"] == "quarantined" and led.loc[str(bad), "reason"].startswith(
        "recorder"
    )
    ops = read_table(spark, BRONZE["io_ops"], str(lake))
    assert ops.where("source = 'RECORDER'").count() > 0
    ior_id = led.loc[str(src / "recorder-ior"), "log_id"]
    jobs = read_table(spark, BRONZE["jobs"], str(lake)).where(f"log_id = '{ior_id}'").collect()
    assert len(jobs) == 1 and jobs[0].nprocs == 2


def test_ingest_keeps_what_decodes_of_a_log_cut_inside_dxt(spark, tmp_path):
    """A copy cut short while DXT was written lands `partial`: its counter modules in bronze, the
    damaged module and the reason in the ledger, no DXT rows."""
    import darshan

    from readers.native_darshan import header_facts

    src = Path(darshan.__file__).parent / "examples" / "example_logs" / "dxt.darshan"
    data = src.read_bytes()
    off, length = next(
        (o, n) for name, o, n in header_facts(data)["regions"] if name == "DXT_POSIX"
    )
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "cut.darshan").write_bytes(data[: off + length // 2])
    lake = tmp_path / "lake"
    # gates off: they check, never change rows, and are tested above
    conf = load_config(
        "local", overrides={"lake": {"root": str(lake)}, "gates": {"enabled": False}}
    )
    summary = run(spark, conf, [str(drop)])
    assert summary["status"] == {"partial": 1}
    led = read_table(spark, BRONZE["logs"], str(lake)).collect()[0]
    assert led.status == "partial" and led.partial_modules == ["DXT_POSIX"]
    assert led.reason.startswith("damaged module DXT_POSIX: ") and "truncated" in led.reason
    assert (
        read_table(spark, BRONZE["posix"], str(lake)).where(f"log_id = '{led.log_id}'").count() > 0
    )
    from iolake.lake import table_exists

    assert (
        not table_exists(spark, BRONZE["io_ops"], str(lake))
        or read_table(spark, BRONZE["io_ops"], str(lake)).where(f"log_id = '{led.log_id}'").count()
        == 0
    )


def test_ingest_lands_autoperf_tables_and_module_info(spark, tmp_path):
    """A log with APMPI and APXC: bronze/apmpi (74 MPI operations per rank) and bronze/apxc (48
    tiles per router) land with the gates on, and the ledger holds each module's version and
    region size (pydarshan: APXC 1374 bytes, APMPI 504 bytes, both version 1)."""
    src = shared_path("darshan", "darshan-logs", "darshan_logs", "apmpi_apxc")
    lake = tmp_path / "lake"
    summary = run(spark, _conf(lake), [str(src)])
    assert summary["status"] == {"ok": 1}
    led = read_table(spark, BRONZE["logs"], str(lake)).collect()[0]
    info = {m.module: (m.version, m.region_bytes) for m in led.modules_info}
    assert info == {
        "POSIX": (4, 170),
        "MPI-IO": (3, 140),
        "LUSTRE": (1, 37),
        "STDIO": (2, 66),
        "APXC": (1, 1374),
        "APMPI": (1, 504),
    }
    assert [m.module for m in led.modules_info][-2:] == ["APXC", "APMPI"]  # module index order
    apmpi = read_table(spark, BRONZE["apmpi"], str(lake))
    assert apmpi.count() == 4 * 74 and dict(led.row_counts)["apmpi"] == 4 * 74
    # rank 0's collectives as pydarshan reads them: 5 barriers, 16 broadcasts of 277 bytes in all
    row = apmpi.where("rank = 0 and op = 'MPI_BCAST'").collect()[0]
    assert (row.call_count, row.total_bytes, row.msg_size_0_256) == (16, 277, 16)
    assert apmpi.where("rank = 0 and op = 'MPI_BARRIER'").collect()[0].call_count == 5
    apxc = read_table(spark, BRONZE["apxc"], str(lake))
    assert apxc.count() == 48 and apxc.where("tile = 'PT'").count() == 8
