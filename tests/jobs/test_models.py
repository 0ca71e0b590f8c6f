"""labels / train / score stages on tiny lakes built from `tests.frames`, and a slow run on the sweep lake."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iolake.config import load_config
from tests.frames import frame
from tests.models.tiny import row

SWEEP_LAKE = Path("/tmp/sweeplake")


def _log(spark, log: str):
    import datetime as dt

    return frame(spark, "logs", [{"source_uri": f"/x/{log}.darshan", "size_bytes": 1, "format": "darshan",
                                  "status": "ok", "ingest_run_id": "t",
                                  "ingested_at": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)}], log_id=log)


def _conf(lake, **models):
    return load_config("local", overrides={"lake": {"root": str(lake)}, "gates": {"enabled": False},
                                           "models": {"splits": 2, "test_fraction": 0.25, **models}})


def _ff_rows(n: int, tier: str, log: str, bw_bb: float, bw_pfs: float):
    out = []
    for i in range(n):
        fpw = bool(i % 2)
        bw = (bw_bb if fpw else bw_pfs) if tier == "bb" else (bw_pfs if fpw else bw_bb)
        r = row(i, fsync_per_write=fpw)
        out.append({**r, "record_id": i, "file_name": f"/{tier}/{log}/f{i}", "tier": tier, "opens": 1, "reads": 0,
                    "writes": 8, "io_type_source": "counters", "bytes_read": 0, "bytes_written": 1 << 20,
                    "bandwidth_mib_s": bw * (1 + 0.01 * i)})
    return out


def tiny_lake(spark, lake: Path):
    """file_features of 4 logs (2 per tier, 12 data files each) and their ledger rows."""
    from iolake.lake import merge_new_logs
    from schemas import BRONZE, SILVER

    logs = []
    for log, tier in (("A", "bb"), ("B", "bb"), ("C", "pfs"), ("D", "pfs")):
        merge_new_logs(spark, SILVER["file_features"], str(lake),
                       frame(spark, "file_features", _ff_rows(12, tier, log, 2000.0, 300.0), log_id=log))
        logs.append(_log(spark, log))
    df = logs[0]
    for d in logs[1:]:
        df = df.unionByName(d)
    merge_new_logs(spark, BRONZE["logs"], str(lake), df)


def test_labels_transform_picks_faster_tier_and_drops_small_margins(spark, tmp_path):
    from jobs.labels import transform

    ff = frame(spark, "file_features", _ff_rows(4, "bb", "A", 1000.0, 980.0) + [], log_id="A").unionByName(
        frame(spark, "file_features", _ff_rows(4, "pfs", "C", 1000.0, 980.0), log_id="C"))
    logs = _log(spark, "A").unionByName(_log(spark, "C"))
    # 4 feature groups, each one file per tier; fsync_per_write files ~1000 on bb, ~980 on pfs (2% margin)
    assert transform(ff, logs, _conf(tmp_path, label_min_margin=0.05)).count() == 0
    got = transform(ff, logs, _conf(tmp_path, label_min_margin=0.0)).orderBy("fsync_per_write", "transfer_size").collect()
    assert [(r.fsync_per_write, r.best_tier) for r in got] == [(False, "pfs")] * 2 + [(True, "bb")] * 2
    assert all(r.files_bb == 1 and r.files_pfs == 1 and 0.01 < r.margin < 0.03 for r in got)


def test_train_on_empty_lake_reports_and_does_not_fail(spark, tmp_path):
    from jobs import train

    lines = []
    out = train.run(spark, _conf(tmp_path), echo=lines.append)
    assert out["trained"] is False and "nothing to train" in lines[0]


def test_score_twice_adds_no_rows(spark, tmp_path):
    from iolake.lake import read_table
    from jobs import labels, score, train
    from schemas import GOLD

    lake = tmp_path / "lake"
    tiny_lake(spark, lake)
    conf = _conf(lake, classifiers=["decision_tree"], regressors=["decision_tree"])
    assert labels.run(spark, conf)["groups"] == 12
    assert train.run(spark, conf)["trained"]
    first = score.run(spark, conf)
    assert first["placement"] == 48 and first["bandwidth"] == 48
    again = score.run(spark, conf)
    assert again["placement"] == 0 and again["bandwidth"] == 0
    preds = read_table(spark, GOLD["placement_predictions"], str(lake)).collect()
    assert len(preds) == 48 and {r.model_version for r in preds} == {"1"}
    assert {r.model_name for r in preds} == {"iolake-placement"}
    assert {r.predicted_tier for r in preds if r.file_name.endswith(("1", "3", "5"))} <= {"bb", "pfs"}


def test_score_signature_drift_names_missing_columns(spark):
    from jobs.score import SchemaDrift, check_columns

    df = spark.createDataFrame([(1, "x")], "n_ranks long, interface string")
    with pytest.raises(SchemaDrift, match="nprocs, fsync"):
        check_columns(df, ["interface", "nprocs", "fsync"], "iolake-placement v3")


@pytest.mark.slow
def test_sweep_placement_accuracy_on_margin_configs(spark, tmp_path, shared_data):
    """Lake labels of the IOR sweep: agreement with labels.csv, and held-out accuracy on the
    configs whose sweep label is beyond the per-tier std (label_margin_gt_std=1)."""
    import pandas as pd

    from features.placement_labels import config_agreement
    from iolake.lake import read_table
    from jobs import labels
    from models import placement
    from schemas import BRONZE, GOLD, SILVER

    if not (SWEEP_LAKE / "silver" / "file_features").exists():
        pytest.skip(f"needs the featured sweep lake at {SWEEP_LAKE}")
    lake = tmp_path / "lake"
    for part in ("bronze/logs", "silver/file_features"):
        shutil.copytree(SWEEP_LAKE / part, lake / part)
    truth_csv = shared_data / "iosweep" / "labels.csv"
    conf = _conf(lake, ground_truth=str(truth_csv))
    out = labels.run(spark, conf)
    assert out["agreement"]["agree_pct"] >= 85.0
    lab = read_table(spark, GOLD["placement_labels"], str(lake))
    agree = config_agreement(read_table(spark, SILVER["file_features"], str(lake)),
                             read_table(spark, BRONZE["logs"], str(lake)), lab, pd.read_csv(truth_csv))
    strong_groups = set(agree[agree.label_margin_gt_std == 1].group_id)
    df = lab.toPandas()
    strong = df.group_id.isin(strong_groups)
    r = placement.fit_and_evaluate("lightgbm", df, df.best_tier, n_splits=10, test_fraction=0.1, seed=42,
                                   strong=strong)
    print(f"lightgbm accuracy {r['accuracy_mean']:.3f} ± {r['accuracy_std']:.3f}, margin configs "
          f"{r['accuracy_strong_mean']:.3f} (majority {r['baseline_strong_mean']:.3f})")
    assert r["accuracy_strong_mean"] >= 0.9
    assert r["accuracy_mean"] >= r["baseline_mean"] - 0.02
