"""`iolake watch --history FILE [--out CSV]` on a centre's own history table (no Spark, no lake)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from iolake.cli import main

WOBBLE = [1.0, 1.12, 0.9, 1.05, 0.93, 1.08, 0.88, 1.02, 0.97, 1.1]
T0 = 1_700_000_000


def _history(tmp_path, fmt: str = "csv"):
    rows = []
    for j, app in enumerate(("climate|4096", "genome|64", "cfd|1024")):
        for i in range(60):
            bw = 1000.0 * (j + 1) * WOBBLE[(i + j) % 10]
            if app == "genome|64" and i >= 45:
                bw *= 0.5  # genome runs at half speed from its run 45 on
            rows.append({"app": app, "start": T0 + i * 86400 + 600 * j, "bandwidth_mib_s": bw})
    df = pd.DataFrame(rows).sample(frac=1.0, random_state=3)  # the command sorts
    path = tmp_path / f"history.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.assign(start=pd.to_datetime(df["start"], unit="s", utc=True)).to_parquet(
            path, index=False
        )
    return path


def test_watch_flags_the_slowed_application_and_writes_csv(tmp_path, capsys):
    out = tmp_path / "out" / "regressions.csv"
    assert main(["watch", "--history", str(_history(tmp_path)), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "1 regressions in 1 applications" in printed and "genome|64" in printed
    got = pd.read_csv(out)
    for col in (
        "app",
        "start",
        "metric",
        "value",
        "baseline",
        "change",
        "rule",
        "threshold_name",
        "baseline_runs",
        "baseline_first",
        "baseline_last",
        "weather",
    ):
        assert col in got.columns
    assert got.app.tolist() == ["genome|64"] and got.metric.tolist() == ["bandwidth_mib_s"]
    flagged_run = (pd.Timestamp(got.start[0]) - pd.Timestamp(T0 + 600, unit="s", tz="UTC")).days
    assert 45 <= flagged_run < 50
    assert got.change[0] < -0.3 and got.threshold_name[0].startswith("watch.")
    assert got.weather.isna().all()  # no fs column: no weather verdict


def test_watch_reads_parquet_with_timestamps_the_same(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main(["watch", "--history", str(_history(tmp_path, "csv")), "--out", str(a)]) == 0
    assert main(["watch", "--history", str(_history(tmp_path, "parquet")), "--out", str(b)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(a), pd.read_csv(b))


def test_watch_refuses_a_history_without_the_metric(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"app": ["x"], "start": [T0], "throughput": [np.float64(1.0)]}).to_csv(
        bad, index=False
    )
    assert main(["watch", "--history", str(bad)]) == 2
    assert "bandwidth_mib_s" in capsys.readouterr().err
