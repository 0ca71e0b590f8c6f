"""Bandwidth models that learn from the lake itself (issue 40): a lake of single-tier jobs from
several applications trains the job and file bandwidth models on its own rows (training origin
`lake`), split by application; score writes each job's efficiency (measured / predicted), the
fleet stage its median per application-month, and the report says it in one line.

The lake is built from literal rows: 8 applications (programs `app0`..`app7`, one user, one file
system `/scratch`, tier `pfs`), 6 runs each a day apart, 3 data files a run. Every expected value
is recomputed here from the tables (gold/app_runs for the applications, silver/job_features for
the measured throughput, gold/job_bandwidth_predictions for the predicted one), not by the code
under test."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest

from iolake.config import load_config
from tests.models.tiny import row
from tests.support.frames import frame

APPS, RUNS, FILES = 8, 6, 3
T0 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)


def _log_id(a: int, r: int) -> str:
    return f"a{a}r{r}"


def _conf(lake: Path, **models):
    return load_config(
        "local",
        overrides={
            "lake": {"root": str(lake)},
            "gates": {"enabled": False},
            "models": {
                "splits": 3,
                "test_fraction": 0.25,
                "classifiers": ["decision_tree"],
                "regressors": ["decision_tree", "linear"],
                "cv_jobs": 1,
                "lake_min_jobs": 30,
                "lake_min_apps": 6,
                **models,
            },
        },
    )


def _job(a: int, r: int) -> dict:
    written = (a + 1) * (1 + r % 3) << 26
    secs = 2.0 + a + 0.5 * r
    return {
        "jobid": 100 * a + r,
        "uid": 1000,
        "program": f"app{a}",
        "start_time": T0 + dt.timedelta(days=r, hours=a),
        "run_time_s": 60.0 + r,
        "nprocs": 2 ** (1 + a % 4),
        "file_count": FILES,
        "shared_file_count": 0,
        "seq_pct": 90.0,
        "small_requests": None if (a + r) % 5 == 0 else 0,  # a nullable count, as in real logs
        "medium_requests": 8 * FILES,
        "read_requests": 0,
        "write_requests": 8 * FILES,
        "bytes_read": 0,
        "bytes_written": written,
        "read_time_s": 0.0,
        "write_time_s": secs,
        "meta_time_s": 0.1,
        "meta_time_share": 0.1 / (secs + 0.1),
        "io_time_s": secs,
        "throughput_mib_s": written / (1 << 20) / secs,
        "interfaces": ["POSIX"],
        "tiers": ["pfs"],
        "suspect": False,
    }


def _files(a: int, r: int, job: dict) -> list[dict]:
    per = job["bytes_written"] // FILES
    return [
        {
            **row(a + i, nprocs=job["nprocs"]),
            "record_id": i,
            "file_name": f"/scratch/app{a}/run{r}/f{i}",
            "mount_point": "/scratch",
            "tier": "pfs",
            "opens": 1,
            "reads": 0,
            "writes": 8,
            "io_type_source": "counters",
            "bytes_read": 0,
            "bytes_written": per,
            "bandwidth_mib_s": job["throughput_mib_s"] * (1 + 0.1 * i),
        }
        for i in range(FILES)
    ]


def _ledger(log: str):
    return {
        "source_uri": f"/x/{log}.darshan",
        "size_bytes": 1,
        "format": "darshan",
        "status": "ok",
        "ingest_run_id": "t",
        "ingested_at": T0,
    }


def build(spark, lake: Path) -> dict:
    """The lake's silver/job_features, silver/file_features and bronze/logs; {log_id: job row}."""
    from iolake.lake import merge_new_logs
    from schemas import BRONZE, SILVER

    jobs, jf, ff, logs = {}, None, None, None
    for a in range(APPS):
        for r in range(RUNS):
            log = _log_id(a, r)
            jobs[log] = _job(a, r)
            parts = (
                frame(spark, "job_features", [jobs[log]], log_id=log, job_month="2024-03"),
                frame(
                    spark,
                    "file_features",
                    _files(a, r, jobs[log]),
                    log_id=log,
                    job_month="2024-03",
                ),
                frame(spark, "logs", [_ledger(log)], log_id=log, job_month="2024-03"),
            )
            jf, ff, logs = (
                parts
                if jf is None
                else (
                    jf.unionByName(parts[0]),
                    ff.unionByName(parts[1]),
                    logs.unionByName(parts[2]),
                )
            )
    merge_new_logs(spark, SILVER["job_features"], str(lake), jf)
    merge_new_logs(spark, SILVER["file_features"], str(lake), ff)
    merge_new_logs(spark, BRONZE["logs"], str(lake), logs)
    return jobs


@pytest.fixture(scope="module")
def lake_run(spark, tmp_path_factory):
    """watch, train, score and fleet on the lake: {"lake", "conf", "jobs", "train", "lines"}."""
    from jobs import fleet, score, train, watch

    lake = tmp_path_factory.mktemp("lake-models") / "lake"
    jobs = build(spark, lake)
    conf = _conf(lake)
    lines: list[str] = []
    watch.run(spark, conf, echo=lines.append)
    out = train.run(spark, conf, echo=lines.append)
    score.run(spark, conf, echo=lines.append)
    fleet.run(spark, conf, echo=lines.append)
    print("\n".join(lines))
    return {"lake": lake, "conf": conf, "jobs": jobs, "train": out, "lines": lines}


def _table(lake: Path, name: str) -> list[dict]:
    from deltalake import DeltaTable

    return DeltaTable(str(lake / name)).to_pyarrow_table().to_pylist()


def _runs(conf, model: str):
    import mlflow

    from models import tracking

    tracking.configure(conf)
    exp = mlflow.get_experiment_by_name(model)
    return mlflow.search_runs([exp.experiment_id], output_format="list")


@pytest.mark.slow
def test_single_tier_lake_trains_both_bandwidth_models_on_itself(lake_run):
    out, conf = lake_run["train"], lake_run["conf"]
    assert "job_bandwidth" in out and "bandwidth" in out, lake_run["lines"]
    text = "\n".join(lake_run["lines"])
    assert f"{APPS * RUNS} plausible single-tier lake jobs" in text
    assert "the bandwidth models train on the lake" in text
    for model, source in (
        (conf.models.job_bandwidth_model, "silver/job_features"),
        (conf.models.bandwidth_model, "silver/file_features"),
    ):
        (run,) = _runs(conf, model)
        assert run.data.tags["iolake.training_origin"] == "lake"
        assert run.data.tags["iolake.training_source"] == source
        assert run.data.params["split"] == "grouped by application"
        m = run.data.metrics
        # with every held-out application unseen, its own median is the training part's global
        # median: both baselines are there, and the time-ordered split scored later runs
        for k in (
            "app_baseline_mdape_pct_mean",
            "app_baseline_r2_log_mean",
            "time_split.model_mdape_pct",
            "time_split.app_baseline_mdape_pct",
            "time_split.tier_baseline_mdape_pct",
        ):
            assert k in m and np.isfinite(m[k]), (model, k)
        assert m["app_split_test_apps_with_history"] == 0.0
        assert m["time_split.test_apps_with_history"] == 1.0


@pytest.mark.slow
def test_splits_hold_whole_applications_out(lake_run):
    """Each split's held-out logs (the run's splits.json) against gold/app_runs' key, read here: no
    application (hence no log) is on both sides."""
    import mlflow

    conf, lake = lake_run["conf"], lake_run["lake"]
    app_of = {r["log_id"]: r["app"] for r in _table(lake, "gold/app_runs")}
    assert len(set(app_of.values())) == APPS
    every = set(lake_run["jobs"])
    for model in (conf.models.job_bandwidth_model, conf.models.bandwidth_model):
        (run,) = _runs(conf, model)
        path = mlflow.artifacts.download_artifacts(
            run_id=run.info.run_id, artifact_path="splits.json"
        )
        splits = json.loads(Path(path).read_text())["splits"]
        assert len(splits) == conf.models.splits
        for s in splits:
            test = set(s["test_logs"])
            assert test and test < every
            test_apps = {app_of[x] for x in test}
            train_apps = {app_of[x] for x in every - test}
            assert not test_apps & train_apps, (model, test_apps & train_apps)
            assert set(s["test_apps"]) == test_apps


@pytest.mark.slow
def test_efficiency_is_measured_over_predicted(lake_run):
    lake = lake_run["lake"]
    measured = {r["log_id"]: r["throughput_mib_s"] for r in _table(lake, "silver/job_features")}
    preds = _table(lake, "gold/job_bandwidth_predictions")
    assert len(preds) == APPS * RUNS
    for p in preds:
        assert p["training_origin"] == "lake"
        assert p["predicted_throughput_mib_s"] > 0
        want = measured[p["log_id"]] / p["predicted_throughput_mib_s"]
        assert p["efficiency"] == pytest.approx(want, rel=1e-12)


@pytest.mark.slow
def test_app_month_median_efficiency(lake_run):
    lake = lake_run["lake"]
    app_of = {r["log_id"]: r["app"] for r in _table(lake, "gold/app_runs")}
    measured = {r["log_id"]: r["throughput_mib_s"] for r in _table(lake, "silver/job_features")}
    by_app: dict = {}
    for p in _table(lake, "gold/job_bandwidth_predictions"):
        by_app.setdefault(app_of[p["log_id"]], []).append(
            measured[p["log_id"]] / p["predicted_throughput_mib_s"]
        )
    got = {r["app"]: r for r in _table(lake, "gold/fleet_app_month")}
    assert set(got) == set(by_app)
    for app, effs in by_app.items():
        assert got[app]["efficiency_runs"] == len(effs)
        assert got[app]["efficiency_p50"] == pytest.approx(float(np.median(effs)), rel=1e-12)


@pytest.mark.slow
def test_report_says_the_efficiency(lake_run):
    from apps.report import LakeReader, efficiency_line

    lake = lake_run["lake"]
    p = next(r for r in _table(lake, "gold/job_bandwidth_predictions") if r["log_id"] == "a3r4")
    line = efficiency_line(LakeReader(lake_run["conf"]), "a3r4")
    assert line.startswith(
        f"This job got {p['efficiency']:.2f} of what similar jobs on this file system get"
    )
    assert f"(iolake-job-bandwidth v{p['model_version']}, trained on this lake)" in line
    # the figures behind it (`--format json`'s `efficiency`; the page needs bronze, this lake has none)
    from apps.report import efficiency_facts

    facts = efficiency_facts(LakeReader(lake_run["conf"]), "a3r4")
    assert facts["efficiency"] == p["efficiency"] and facts["line"] == line
    assert facts["measured_mib_s"] == p["throughput_mib_s"]
    assert facts["expected_mib_s"] == p["predicted_throughput_mib_s"]
    assert (facts["model_version"], facts["training_origin"]) == (str(p["model_version"]), "lake")


def test_lake_enough_counts_keyed_applications():
    import pandas as pd

    from jobs.train import NO_APP, _lake_enough

    m = _conf(Path("/nonexistent")).models
    apps = [f"x{i % 6}" for i in range(30)]
    assert _lake_enough(pd.DataFrame({"app": apps}), m) == (True, 6)
    assert _lake_enough(pd.DataFrame({"app": apps[:29]}), m) == (False, 6)  # 29 jobs < 30
    # jobs without a key (no start time) are their own split group but no application
    unkeyed = [f"{NO_APP}{i}" for i in range(30)]
    assert _lake_enough(pd.DataFrame({"app": apps[:5] + unkeyed}), m) == (False, 5)


def test_lake_min_apps_below_two_is_refused():
    from iolake.config import ConfigError

    with pytest.raises(ConfigError, match="models.lake_min_apps"):
        load_config("local", overrides={"models": {"lake_min_apps": 1}})
    with pytest.raises(ConfigError, match="models.lake_min_jobs"):
        load_config("local", overrides={"models": {"lake_min_apps": 10, "lake_min_jobs": 5}})


def _add_runs(spark, lake: Path, runs: list[tuple[int, int]]) -> None:
    from iolake.lake import merge_new_logs
    from schemas import BRONZE, SILVER

    for a, r in runs:
        log, job = _log_id(a, r), _job(a, r)
        for spec, rows, extra in (
            (SILVER["job_features"], [job], {"job_month": "2024-03"}),
            (SILVER["file_features"], _files(a, r, job), {"job_month": "2024-03"}),
            (BRONZE["logs"], [_ledger(log)], {"job_month": "2024-03"}),
        ):
            merge_new_logs(
                spark, spec, str(lake), frame(spark, spec.name, rows, log_id=log, **extra)
            )


@pytest.mark.slow
def test_a_small_drop_keeps_the_lake_models_a_large_one_retrains(spark, lake_run):
    """models.retrain_growth 0.1 (the default): the models saw 48 jobs + 144 files = 192 rows. One
    more run (49 + 147 = 196 rows, +2.1%) keeps both champions; four more (53 + 159 = 212 rows,
    >= 192 x 1.1 = 211.2) retrain both. The first night runs with another heap and cv_jobs: a
    tuning change keeps the models too. Runs last in this module: it adds to the lake."""
    import dataclasses

    from jobs import train, watch

    lake, conf = lake_run["lake"], lake_run["conf"]
    assert conf.models.retrain_growth == 0.1
    tuned = dataclasses.replace(
        conf,
        spark=dataclasses.replace(
            conf.spark, properties={**conf.spark.properties, "spark.driver.memory": "5g"}
        ),
        models=dataclasses.replace(conf.models, cv_jobs=conf.models.cv_jobs + 1),
    )
    assert tuned.digest() != conf.digest()
    models = (conf.models.bandwidth_model, conf.models.job_bandwidth_model)
    before = {m: len(_runs(conf, m)) for m in models}
    _add_runs(spark, lake, [(0, RUNS)])
    lines: list[str] = []
    watch.run(spark, tuned, echo=lines.append)
    out = train.run(spark, tuned, echo=lines.append)
    text = "\n".join(lines)
    assert (
        "[train] bandwidth: the lake's models were trained on 192 rows; the lake holds 196 (+2.1%), "
        "under models.retrain_growth 10%: kept, not retrained" in text
    ), text
    assert "bandwidth" not in out and "job_bandwidth" not in out
    assert {m: len(_runs(conf, m)) for m in models} == before

    _add_runs(spark, lake, [(a, RUNS) for a in range(1, 5)])
    lines.clear()
    watch.run(spark, conf, echo=lines.append)
    out = train.run(spark, conf, echo=lines.append)
    assert "bandwidth" in out and "job_bandwidth" in out, lines
    assert {m: len(_runs(conf, m)) for m in models} == {m: n + 1 for m, n in before.items()}
    for m in models:
        newest = max(_runs(conf, m), key=lambda r: r.info.start_time)
        assert newest.data.tags["iolake.lake_rows"] == "212"
