"""Implausible counters flag a log `suspect` (features/suspect.py): hand-built Darshan logs
(tests/support/darshan_writer.py: 64 processes, a run of 100 s) through ingest and features, each
flagged with the reason it was built with, the plausible one not; then watch, labels, train and
advise leave the suspect logs out and say how many, and the report shows the notice."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

from iolake.config import load_config
from iolake.lake import read_table
from jobs import advise, features, ingest, labels, train, watch
from schemas import BRONZE, GOLD, SILVER
from schemas.darshan_counters import MODULE_COUNTERS
from tests.support.darshan_writer import POSIX, RECORD_ID, write_log

pytestmark = pytest.mark.slow

_, INTS, FLOATS = MODULE_COUNTERS["posix"]
GIB = 1 << 30
MAX_COUNTER = 1 << 62  # conf/base.yaml's suspect.max_counter
MAX_RATE = 2 * GIB  # conf/base.yaml's suspect.max_bytes_per_s_per_process


def posix_record(rank: int = 0, **counters) -> bytes:
    """One POSIX (module version 4) record of RECORD_ID: 16-byte base record, 69 int64 counters,
    17 doubles; every counter 0 unless given."""
    ints = [int(counters.get(n, 0)) for n in INTS]
    floats = [float(counters.get(n, 0.0)) for n in FLOATS]
    return struct.pack(f"<Qq{len(ints)}q{len(floats)}d", RECORD_ID, rank, *ints, *floats)


def _log(folder: Path, name: str, **counters) -> None:
    fh = io.BytesIO()
    write_log(fh, {POSIX: [posix_record(**counters)]}, {POSIX: 4})
    (folder / name).write_bytes(fh.getvalue())


READ = {  # 1 GiB read by rank 0 in 1,024 reads, 2 s of read time, within the run
    "POSIX_OPENS": 1,
    "POSIX_READS": 1024,
    "POSIX_BYTES_READ": GIB,
    "POSIX_F_READ_TIME": 2.0,
    "POSIX_F_OPEN_START_TIMESTAMP": 1.0,
    "POSIX_F_READ_START_TIMESTAMP": 1.0,
    "POSIX_F_READ_END_TIMESTAMP": 3.0,
    "POSIX_F_CLOSE_END_TIMESTAMP": 3.5,
}
LOGS = {
    "fine": READ,
    # 1e12 bytes by one rank in a run of 100 s: 1e12 / (100 + 1 s of slack) = 9.901e9 B/s > 2 GiB/s
    "rate": {
        **READ,
        "POSIX_READS": 1_000_000,
        "POSIX_BYTES_READ": 10**12,
        "POSIX_F_READ_TIME": 50.0,
    },
    # a byte counter near 2^63: wrapped
    "overflow": {
        **READ,
        "POSIX_READS": 0,
        "POSIX_BYTES_READ": 0,  # alone: the file's bytes read + written must not overflow Spark's long
        "POSIX_WRITES": 10,
        "POSIX_BYTES_WRITTEN": (1 << 63) - 4096,
    },
    # a negative count (not Darshan's -1) and a negative time
    "negative": {**READ, "POSIX_READS": -7, "POSIX_F_READ_TIME": -500.0},
    # a write ending 400 s after the run's end
    "late": {
        **READ,
        "POSIX_WRITES": 1,
        "POSIX_BYTES_WRITTEN": 4096,
        "POSIX_F_WRITE_END_TIMESTAMP": 500.0,
    },
}
# the reasons, from the numbers above by hand (Spark's format_string is Java's: %g keeps trailing zeros)
WANT = {
    "fine": None,
    "rate": [
        "rate: rank 0 moved 1.000e+12 bytes",
        "in a run of 100.000 s: 9.901e+09 B/s per process is above "
        f"suspect.max_bytes_per_s_per_process = {MAX_RATE}",
    ],
    "overflow": [
        f"POSIX_BYTES_WRITTEN = {(1 << 63) - 4096} is at or above suspect.max_counter = {MAX_COUNTER}"
    ],
    "negative": [
        "POSIX_READS = -7 is negative",
        "POSIX_F_READ_TIME = -500.000 s is negative",
    ],
    "late": ["POSIX_F_WRITE_END_TIMESTAMP = 500.000 s is after the run's end (run time 100.000 s"],
}


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("suspect")
    logs = tmp / "logs"
    logs.mkdir()
    for name, counters in LOGS.items():
        _log(logs, f"{name}.darshan", **counters)
    root = tmp / "lake"
    conf = load_config(
        "local",
        overrides={
            "lake": {"root": str(root)},
            "mlflow": {"tracking_uri": f"sqlite:///{tmp}/mlflow.db"},
            "models": {"default_benchmark": None},
        },
    )
    said: list[str] = []
    ingest.run(spark, conf, [str(logs)], echo=said.append)
    led = read_table(spark, BRONZE["logs"], str(root)).collect()
    names = {r.log_id: Path(r.source_uri).stem for r in led}
    summary = {"features": features.run(spark, conf, echo=said.append)}
    for mod in (watch, labels, train, advise):
        summary[mod.__name__.split(".")[-1]] = mod.run(spark, conf, echo=said.append)
    return {"conf": conf, "names": names, "said": said, "summary": summary}


def _job_rows(spark, lake) -> dict:
    rows = read_table(spark, SILVER["job_features"], lake["conf"].lake.root).collect()
    return {lake["names"][r.log_id]: r for r in rows}


def test_suspect_each_log_flagged_with_its_reason(spark, lake):
    rows = _job_rows(spark, lake)
    assert set(rows) == set(LOGS)  # every log kept, none quarantined
    for name, want in WANT.items():
        r = rows[name]
        if want is None:
            assert r.suspect is False and r.suspect_reason is None, (name, r.suspect_reason)
            continue
        assert r.suspect is True, name
        for part in want:
            assert part in r.suspect_reason, (name, part, r.suspect_reason)
    # one reason each: the other counters of these logs are plausible
    assert rows["overflow"].suspect_reason.count("; ") == 0
    assert rows["negative"].suspect_reason.count("; ") == 1
    # an overflowed or negative count adds nothing to the job's sums
    assert rows["overflow"].bytes_written == 0 and rows["negative"].read_requests == 0
    assert lake["summary"]["features"]["suspect"] == 4


def test_suspect_logs_left_out_of_watch_labels_train_advise(spark, lake):
    root = lake["conf"].lake.root
    runs = read_table(spark, GOLD["app_runs"], root).collect()
    assert [lake["names"][r.log_id] for r in runs] == ["fine"]
    s = lake["summary"]
    assert s["watch"]["suspect"] == 4 and s["advise"]["suspect"] == 4
    said = "\n".join(lake["said"])
    assert "[watch] " in said and "; 4 suspect logs left out" in said
    assert "[labels] 4 suspect logs left out" in said
    assert "[train] bandwidth: 4 suspect logs left out of the lake's training rows" in said
    assert "; 4 suspect logs' throughput left out of the history" in said
    # the suspect jobs are still advised (their tags); only their throughput is no history
    advised = read_table(spark, GOLD["tuning_advice"], root).select("log_id").distinct().count()
    assert advised == len(LOGS)


def test_suspect_report_shows_the_notice(lake):
    from apps import report

    conf = lake["conf"]
    ids = {v: k for k, v in lake["names"].items()}
    reader = report.LakeReader(conf)
    bad = report.build(reader, ids["rate"])
    assert bad.suspect and "suspect.max_bytes_per_s_per_process" in bad.suspect
    html = report.render(bad)
    assert 'id="suspect"' in html and "excluded from models" in html
    text = report.to_text(bad)
    assert "SUSPECT: rate: rank 0 moved" in text and "watch" in text
    js = report.to_json(bad)
    assert js["suspect"]["excluded_from"] == ["models", "watch", "advice"]
    assert js["suspect"]["reason"] == bad.suspect
    fine = report.build(reader, ids["fine"])
    assert fine.suspect is None and 'id="suspect"' not in report.render(fine)
    assert report.to_json(fine)["suspect"] is None
