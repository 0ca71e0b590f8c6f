"""gold/tuning_advice's stripe rows (features/advice.py `stripe_rows`) on Spark: the jobs with no
stripe value (not on Lustre) stay in Spark and are only counted, yet the advice, its run number and
its evidence are DCA-IO's over the whole history (§IV-B, Procedure 2), worked here by hand."""

from __future__ import annotations

import datetime as dt

from features import advice
from iolake.config import load_config
from tests.models.tiny import row
from tests.support.frames import frame

MIB = 1 << 20
T0 = dt.datetime(2026, 1, 1)


def _job(spark, log_id, hours, program="app", stripe=True, tp=100.0):
    job = {
        "program": program,
        "nprocs": 4,
        "start_time": T0 + dt.timedelta(hours=hours),
        "throughput_mib_s": tp,
        "tiers": ["pfs"],
        **dict.fromkeys(
            ("file_count", "shared_file_count", "read_requests", "write_requests", "bytes_read"), 1
        ),
        "bytes_written": 64 * MIB,
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
                "reads": 0,
                "writes": 16,
                "file_name": "/lus/out.h5",
                "tier": "pfs",
                "opens": 1,
                "bytes_read": 0,
                "bytes_written": 64 * MIB,
                "io_type_source": "counters",
                "bandwidth_mib_s": 300.0,
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
