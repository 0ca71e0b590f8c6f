"""gold/tuning_advice's stripe rows (features/advice.py `stripe_rows`) on Spark: the jobs with no
stripe value (not on Lustre) stay in Spark and are only counted, yet the advice, its run number and
its evidence are DCA-IO's over the whole history (§IV-B, Procedure 2), worked here by hand."""

from __future__ import annotations

import datetime as dt

import pyspark.sql.functions as F

from features import advice
from iolake.config import load_config
from tests.models.tiny import row
from tests.support.frames import frame

MIB = 1 << 20
T0 = dt.datetime(2026, 1, 1)
# the non-null columns of a job and of a file written once, whatever the test
JOB_FILLER = {
    **dict.fromkeys(("file_count", "shared_file_count", "read_requests", "write_requests"), 1),
    "bytes_read": 0,
    "bytes_written": 64 * MIB,
}
FILE_WRITTEN = {
    "reads": 0,
    "writes": 16,
    "tier": "pfs",
    "opens": 1,
    "bytes_read": 0,
    "bytes_written": 64 * MIB,
    "io_type_source": "counters",
    "bandwidth_mib_s": 300.0,
}


def _job(spark, log_id, hours, program="app", stripe=True, tp=100.0):
    job = {
        "program": program,
        "nprocs": 4,
        "start_time": T0 + dt.timedelta(hours=hours),
        "throughput_mib_s": tp,
        "tiers": ["pfs"],
        **JOB_FILLER,
        "bytes_read": 1,
    }
    if stripe:
        job.update(stripe_count=1, stripe_size=MIB)
    return frame(spark, "job_features", [job], log_id=log_id)


def test_stripe_row_counts_the_applications_runs_not_on_lustre(spark):
    jobs = [
        _job(spark, "X0", -2, stripe=False),  # app's first run: not on Lustre
        _job(spark, "A", 0),  # app on Lustre, a file shared by 4 ranks
        _job(spark, "Y", 0.2, program="other", stripe=False),  # another program: not counted
        _job(spark, "X1", 0.5, stripe=False),  # app again, not on Lustre
        _job(spark, "B", 1, tp=120.0),  # the job advised
        _job(spark, "X2", 2, stripe=False),  # after B: not counted
    ]
    jf = jobs[0]
    for j in jobs[1:]:
        jf = jf.unionByName(j)
    shared = row(0, interface="MPI-IO", file_per_process=False, n_ranks=4, nprocs=4)
    ff = frame(
        spark,
        "file_features",
        [
            {
                **shared,
                "record_id": 1,
                "file_name": "/lus/out.h5",
                **FILE_WRITTEN,
            }
        ],
        log_id="A",
    )
    todo = jf.where("log_id = 'B'").select("log_id", "job_month")
    conf = load_config("local")
    got = advice.stripe_rows(spark, jf, ff, todo, conf.advise, conf.site).collect()
    assert [r.log_id for r in got] == ["B"]
    b = got[0]
    # B's application ran 3 times before it (X0, A, X1); one usable run (A) -> the rule phase:
    # A wrote a shared file with 4 processes -> 4 stripes of 1 MiB; X0 and X1 were skipped
    assert b.message.startswith("DCA-IO (rule phase, run 4 of this application): ")
    assert (b.current, b.advised) == (
        "stripe count 1, stripe size 1M",
        "stripe count 4, stripe size 1M",
    )
    assert b.evidence[-1] == "2 earlier runs skipped: no throughput or stripe count"


def _lake(rng, n):
    """n jobs of three programs over 48 hours (a few without a start time), a third not on Lustre,
    each Lustre job with one data file, shared by its ranks or one per rank: (job rows, file rows,
    the same jobs in pandas with the file sharing DCA-IO's rule phase reads)."""
    import pandas as pd

    jobs, files, flat = [], [], []
    for i in range(n):
        log_id, program = f"L{i:03d}", str(rng.choice(["a", "b", "c"]))
        hours = None if rng.random() < 0.05 else float(rng.integers(0, 48))
        start = None if hours is None else T0 + dt.timedelta(hours=hours)
        month = "2026-01" if hours is None or hours < 24 else "2026-02"
        nprocs = int(rng.choice([4, 8]))
        lustre = rng.random() > 0.3
        count = int(rng.choice([1, 2, 4])) if lustre and rng.random() > 0.1 else None
        size = int(rng.choice([1, 4])) * MIB if lustre and rng.random() > 0.2 else None
        tp = None if rng.random() < 0.1 else float(rng.integers(1, 6) * 100)
        shared = bool(rng.random() < 0.5)
        jobs.append(
            {
                "log_id": log_id,
                "job_month": month,
                "program": program,
                "nprocs": nprocs,
                "start_time": start,
                "throughput_mib_s": tp,
                "tiers": ["pfs"],
                "stripe_count": count,
                "stripe_size": size,
                **JOB_FILLER,
            }
        )
        flat.append(
            {
                **jobs[-1],
                "start_time": pd.NaT if start is None else pd.Timestamp(start),
                "shared": shared,
                "io_procs": nprocs if shared else None,
            }
        )
        base = row(0, interface="MPI-IO", file_per_process=not shared, nprocs=nprocs)
        files.append(
            {
                **base,
                "log_id": log_id,
                "job_month": month,
                "record_id": 1,
                "n_ranks": nprocs if shared else 1,
                "file_name": f"/lus/{log_id}.h5",
                **FILE_WRITTEN,
            }
        )
    return jobs, files, pd.DataFrame(flat)


def test_stripe_rows_replay_from_the_cut_and_equal_the_whole_replay(spark):
    """The jobs to advise replayed from the earliest of their start times, what came before summed up
    in Spark (`stripe_prior`): every stripe row equals DCA-IO's replay of the whole history
    (`stripe_advice.advise_runs` over every job, in pandas): a night of the last day (jobs without a
    start time among them), then a single job of the first day (a late log), then one without a
    start time alone."""
    import re

    import numpy as np

    from features.stripe_advice import advise_runs, size_text

    rng = np.random.default_rng(23)
    jobs, files, flat = _lake(rng, 90)
    jf, ff = frame(spark, "job_features", jobs), frame(spark, "file_features", files)
    conf = load_config("local")
    whole = advise_runs(
        flat, key=list(conf.advise.stripe_key), growth=conf.advise.stripe_growth
    ).set_index("log_id")
    night = [j["log_id"] for j in jobs if j["start_time"] is None or j["job_month"] == "2026-02"]
    early = [j["log_id"] for j in jobs if j["start_time"] is not None and j["stripe_count"]][:1]
    untimed = [j["log_id"] for j in jobs if j["start_time"] is None and j["stripe_count"]][:1]
    assert len(night) > 30 and early and untimed
    for ids in (night, early, untimed):
        todo = jf.where(F.col("log_id").isin(ids)).select("log_id", "job_month")
        got = advice.stripe_rows(spark, jf, ff, todo, conf.advise, conf.site).toPandas()
        want = whole[whole.index.isin(ids) & whole["current_count"].notna()]
        assert sorted(got["log_id"]) == sorted(want.index)
        for r in got.itertuples():
            w = want.loc[r.log_id]
            assert r.advised == (
                f"stripe count {w.stripe_count}, stripe size {size_text(w.stripe_size)}"
            )
            assert list(r.evidence) == list(w.evidence)
            run = re.search(r"\((\w+) phase, run (\d+) of", r.message)
            assert (run.group(1), int(run.group(2))) == (w.phase, w.run_number)
