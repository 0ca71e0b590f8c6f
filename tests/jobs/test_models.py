"""labels / train / score stages on tiny lakes built from `tests.support.frames`, and slow runs of
the `iolake` command on a stratified subset of the IOR sweep (shared data), checked against the
sweep's labels.csv."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iolake.config import load_config
from tests.models.tiny import row
from tests.support.frames import frame

ROOT = Path(__file__).resolve().parents[2]


def _log(spark, log: str):
    import datetime as dt

    return frame(
        spark,
        "logs",
        [
            {
                "source_uri": f"/x/{log}.darshan",
                "size_bytes": 1,
                "format": "darshan",
                "status": "ok",
                "ingest_run_id": "t",
                "ingested_at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
            }
        ],
        log_id=log,
    )


def _conf(lake, **models):
    return load_config(
        "local",
        overrides={
            "lake": {"root": str(lake)},
            "gates": {"enabled": False},
            "models": {"splits": 2, "test_fraction": 0.25, **models},
        },
    )


def _ff_rows(n: int, tier: str, log: str, bw_bb: float, bw_pfs: float):
    out = []
    for i in range(n):
        fpw = bool(i % 2)
        bw = (bw_bb if fpw else bw_pfs) if tier == "bb" else (bw_pfs if fpw else bw_bb)
        r = row(i, fsync_per_write=fpw)
        out.append(
            {
                **r,
                "record_id": i,
                "file_name": f"/{tier}/{log}/f{i}",
                "tier": tier,
                "opens": 1,
                "reads": 0,
                "writes": 8,
                "io_type_source": "counters",
                "bytes_read": 0,
                "bytes_written": 1 << 20,
                "bandwidth_mib_s": bw * (1 + 0.01 * i),
            }
        )
    return out


def tiny_lake(spark, lake: Path):
    """file_features of 4 logs (2 per tier, 12 data files each) and their ledger rows."""
    from iolake.lake import merge_new_logs
    from schemas import BRONZE, SILVER

    logs = []
    for log, tier in (("A", "bb"), ("B", "bb"), ("C", "pfs"), ("D", "pfs")):
        merge_new_logs(
            spark,
            SILVER["file_features"],
            str(lake),
            frame(spark, "file_features", _ff_rows(12, tier, log, 2000.0, 300.0), log_id=log),
        )
        logs.append(_log(spark, log))
    df = logs[0]
    for d in logs[1:]:
        df = df.unionByName(d)
    merge_new_logs(spark, BRONZE["logs"], str(lake), df)


def test_labels_transform_picks_faster_tier_and_drops_small_margins(spark, tmp_path):
    from jobs.labels import transform

    ff = frame(
        spark, "file_features", _ff_rows(4, "bb", "A", 1000.0, 980.0) + [], log_id="A"
    ).unionByName(frame(spark, "file_features", _ff_rows(4, "pfs", "C", 1000.0, 980.0), log_id="C"))
    logs = _log(spark, "A").unionByName(_log(spark, "C"))
    # 4 feature groups, each one file per tier; fsync_per_write files ~1000 on bb, ~980 on pfs (2% margin)
    assert transform(ff, logs, _conf(tmp_path, label_min_margin=0.05)).count() == 0
    got = (
        transform(ff, logs, _conf(tmp_path, label_min_margin=0.0))
        .orderBy("fsync_per_write", "transfer_size")
        .collect()
    )
    assert [(r.fsync_per_write, r.best_tier) for r in got] == [(False, "pfs")] * 2 + [
        (True, "bb")
    ] * 2
    assert all(r.files_bb == 1 and r.files_pfs == 1 and 0.01 < r.margin < 0.03 for r in got)


def test_train_on_empty_lake_reports_and_does_not_fail(spark, tmp_path):
    from jobs import train

    lines = []
    out = train.run(spark, _conf(tmp_path), echo=lines.append)
    assert out["trained"] is False and "nothing to train" in lines[0]


@pytest.mark.slow
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
    # tiny_lake's odd files (fsync_per_write) are faster on bb, its even files on pfs: every file is
    # predicted on the faster tier (both groups non-empty, so an empty prediction table fails too)
    tiers = {
        fpw: {r.predicted_tier for r in preds if int(r.file_name.rsplit("/f", 1)[1]) % 2 == fpw}
        for fpw in (1, 0)
    }
    assert tiers == {1: {"bb"}, 0: {"pfs"}}

    # the next night: one more bb log of the same files, so labels are rewritten (a new table
    # version, the same 12 label rows); under models.retrain_growth the placement champion is
    # kept, and score predicts the night's 12 files only, not the lake's every file again
    from iolake.lake import merge_new_logs
    from schemas import BRONZE, SILVER

    assert conf.models.retrain_growth == 0.1
    merge_new_logs(
        spark,
        SILVER["file_features"],
        str(lake),
        frame(spark, "file_features", _ff_rows(12, "bb", "E", 2000.0, 300.0), log_id="E"),
    )
    merge_new_logs(spark, BRONZE["logs"], str(lake), _log(spark, "E"))
    assert labels.run(spark, conf)["groups"] == 12
    lines: list[str] = []
    out = train.run(spark, conf, echo=lines.append)
    assert "placement" not in out, lines
    assert (
        "[train] placement: the lake's model was trained on 12 rows; the lake holds 12 (+0.0%), "
        "under models.retrain_growth 10%: kept, not retrained" in lines
    ), lines
    assert score.run(spark, conf)["placement"] == 12
    preds = read_table(spark, GOLD["placement_predictions"], str(lake)).collect()
    assert len(preds) == 60 and {r.model_version for r in preds} == {"1"}


def test_score_signature_drift_names_missing_columns(spark):
    from jobs.score import SchemaDrift, check_columns

    df = spark.createDataFrame([(1, "x")], "n_ranks long, interface string")
    with pytest.raises(SchemaDrift, match="nprocs, fsync"):
        check_columns(df, ["interface", "nprocs", "fsync"], "iolake-placement v3")


# -- the IOR sweep: train on a benchmark, apply to the lake (PrismIO §VII) --------------------------------

HELD_PER_CELL = (
    5  # configs per api x io_type cell (18 cells, 15 configs each) held out of the benchmark
)
DATA_FILTER = "reads + writes > 0 AND interface != 'STDIO' AND bandwidth_mib_s > 0"


def _sweep_configs(truth):
    """Stratified over the sweep's core cells (api x io_type): per cell a seeded draw of
    HELD_PER_CELL configs whose traces the lake ingests and the models only ever score; the
    cell's other configs are the benchmark table the models train on."""
    train, held = [], []
    for _, cell in truth.sort_values("config_id").groupby(["api", "io_type"]):
        ids = cell.config_id.sample(frac=1.0, random_state=20261122).tolist()
        held += ids[:HELD_PER_CELL]
        train += ids[HELD_PER_CELL:]
    return sorted(train), sorted(held)


def _sweep_logs(sweep: Path, configs, tiers=("bb", "pfs"), reps=(1, 2)) -> list[str]:
    return [
        str(sweep / "darshan" / t / f"{t}_c{c:04d}_r{r}.darshan")
        for c in configs
        for t in tiers
        for r in reps
    ]


def _small_models_conf(tmp: Path, benchmark: Path) -> Path:
    """conf/ with lighter model settings (two classifiers, one regressor), the benchmark table, no gates."""
    import yaml

    from iolake.config import CONF_DIR

    d = tmp / "conf"
    shutil.copytree(CONF_DIR, d)
    local = yaml.safe_load((d / "local.yaml").read_text())
    local["spark"]["properties"]["spark.driver.memory"] = "3g"
    local["models"] = {
        "splits": 5,
        "classifiers": ["lightgbm", "random_forest"],
        "regressors": ["decision_tree"],
        "benchmark_table": str(benchmark),
    }
    local["gates"] = {"enabled": False}
    (d / "local.yaml").write_text(yaml.safe_dump(local))
    return d


def _iolake(*argv: str, log: Path) -> None:
    """The `iolake` command in its own process, as it runs for real (a JVM of its own: the stages
    of one command never share the test session's heap)."""
    import subprocess
    import sys

    with open(log, "a") as fh:
        fh.write(f"$ iolake {' '.join(argv[:3])} ...\n")
        fh.flush()
        code = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from iolake.cli import main; sys.exit(main())",
                *argv,
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        ).returncode
    assert code == 0, f"iolake {argv[0]} exited {code}:\n" + log.read_text()[-6000:]


@pytest.fixture(scope="module")
def sweep_lake(spark):
    """The shipped benchmark table minus the held-out configs is the training set
    (`models.benchmark_table`); `iolake run` ingests the held-out configs' traces (both tiers,
    repetition 1: 180 logs), trains on the benchmark and scores the lake's files. No test here
    reads covering sets or fleet marts: `--skip covering,fleet`."""
    import tempfile
    import time

    import pandas as pd

    from models.benchmarks import SHIPPED
    from tests.support.data import shared_path

    sweep = shared_path(
        "iosweep"
    )  # README.md: 270 of 378 configs, 2 reps per tier; labels.csv per config
    truth = pd.read_csv(sweep / "labels.csv")
    train, held = _sweep_configs(truth)
    # not under pytest's basetemp: concurrent pytest sessions prune old basetemps while this runs
    with tempfile.TemporaryDirectory(prefix="iolake-sweep-") as tmp:
        tmp = Path(tmp)
        table = pd.read_csv(SHIPPED["iosweep"])
        assert set(held) <= set(table.config_id), "the shipped table covers every labelled config"
        bench = tmp / "bench.csv"
        table[table.config_id.isin(train)].to_csv(bench, index=False)
        lake, conf_dir, log = tmp / "lake", _small_models_conf(tmp, bench), tmp / "iolake.log"
        t0 = time.monotonic()
        _iolake(
            "run",
            *_sweep_logs(sweep, held, reps=(1,)),
            "--lake",
            str(lake),
            "--conf-dir",
            str(conf_dir),
            "--skip",
            "covering,fleet",
            log=log,
        )
        print(
            f"\n[sweep] iolake run of {len(held)} held-out configs, trained on {len(train)}: "
            f"{time.monotonic() - t0:.0f} s"
        )
        yield {
            "lake": lake,
            "truth": truth.set_index("config_id"),
            "train": train,
            "held": held,
            "log": log.read_text(),
        }


def _per_config(spark, lake: Path, tier_of):
    """config_id -> the tier most of the config's data files (silver/file_features rows of the sweep's
    Darshan logs) get from `tier_of(files, table)` -> (config_id, tier) rows; ties go to bb."""
    import pyspark.sql.functions as F

    def table(part):
        return spark.read.format("delta").load(str(lake / part))

    logs = (
        table("bronze/logs")
        .where("format = 'darshan'")
        .withColumn(
            "config_id", F.regexp_extract("source_uri", r"_c(\d{4})_r\d\.darshan$", 1).cast("int")
        )
        .select("log_id", "config_id")
    )
    files = table("silver/file_features").where(DATA_FILTER).join(logs, "log_id")
    counts = (
        tier_of(files, table)
        .groupBy("config_id", "tier")
        .count()
        .toPandas()
        .sort_values(["config_id", "count", "tier"], ascending=[True, False, True])
    )
    return counts.drop_duplicates("config_id").set_index("config_id").tier


def _lake_labels(files, table):
    """The label the lake's own traces give each file (features/placement_labels.transform: the
    tier of higher mean Darshan file bandwidth among files of identical features), joined on the
    feature columns themselves."""
    from features import placement_labels
    from schemas.placement_labels import FEATURES

    lab = placement_labels.transform(
        table("silver/file_features"), table("bronze/logs"), load_config("local").models
    ).select(*FEATURES, "best_tier")
    return files.join(lab, [files[c].eqNullSafe(lab[c]) for c in FEATURES]).select(
        "config_id", lab.best_tier.alias("tier")
    )


def _predictions(files, table):
    pred = table("gold/placement_predictions").select("log_id", "record_id", "predicted_tier")
    return files.join(pred, ["log_id", "record_id"]).select(
        "config_id", pred.predicted_tier.alias("tier")
    )


@pytest.mark.slow
def test_sweep_lake_labels_agree_with_the_sweep_labels(spark, sweep_lake):
    """Labels the lake derives from Darshan's file bandwidths vs IOR's own (labels.csv), on the
    configs whose sweep label is beyond the per-tier std: far better than always answering the
    majority tier."""
    truth, held = sweep_lake["truth"], sweep_lake["held"]
    lake_tier = _per_config(spark, sweep_lake["lake"], _lake_labels)
    strong = [c for c in held if truth.label_margin_gt_std[c] == 1]
    labelled = [c for c in strong if c in lake_tier.index]
    assert len(labelled) >= 0.8 * len(strong), "most strong configs get a lake label"
    agree = sum(lake_tier[c] == truth.best_tier[c] for c in labelled) / len(labelled)
    majority = truth.loc[sweep_lake["train"]].best_tier.mode()[0]
    baseline = sum(truth.best_tier[c] == majority for c in labelled) / len(labelled)
    print(
        f"\n[sweep] lake labels agree on {agree:.3f} of {len(labelled)} strong configs (majority {baseline:.3f})"
    )
    assert agree >= 0.9 and agree > baseline


@pytest.mark.slow
def test_sweep_benchmark_model_on_held_out_lake_configs(spark, sweep_lake):
    """The champion trained on the benchmark table (the other configs), scoring the lake's files of
    configs it never saw, vs the sweep's labels on those with label_margin_gt_std=1."""
    truth, held = sweep_lake["truth"], sweep_lake["held"]
    assert "[labels] " in sweep_lake["log"] and "label groups from benchmark" in sweep_lake["log"]
    predicted = _per_config(spark, sweep_lake["lake"], _predictions)
    assert set(held) <= set(predicted.index), "every held-out config has scored data files"
    strong = [c for c in held if truth.label_margin_gt_std[c] == 1]
    majority = truth.loc[sweep_lake["train"]].best_tier.mode()[0]
    acc = sum(predicted[c] == truth.best_tier[c] for c in strong) / len(strong)
    baseline = sum(truth.best_tier[c] == majority for c in strong) / len(strong)
    print(
        f"\n[sweep] held-out accuracy {acc:.3f} on {len(strong)} strong configs (majority {baseline:.3f})"
    )
    assert len(strong) >= 50
    assert acc > baseline  # answering the majority tier everywhere scores exactly the baseline
    # README: fsync after every write (-Y) makes the disk tier 1-2 orders of magnitude slower
    fsync_writes = [
        c for c in strong if truth.fsync_per_write[c] == 1 and truth.num_write_passes[c] > 0
    ]
    assert fsync_writes and all(predicted[c] == "bb" for c in fsync_writes)


@pytest.mark.slow
def test_sweep_score_reports_accuracy_where_the_lake_measured_the_gap(sweep_lake):
    import re

    m = re.search(
        r"\[score\] iolake-placement v1 on the (\d+) scored files whose tier gap the lake measured .*"
        r"accuracy ([0-9.]+) \(best constant answer ([0-9.]+)\)",
        sweep_lake["log"],
    )
    assert m, sweep_lake["log"][-3000:]
    print("\n[sweep] " + m.group(0))
    assert int(m.group(1)) > 100 and 0.0 <= float(m.group(2)) <= 1.0


@pytest.mark.slow
def test_sweep_advice_measured_on_held_out_configs(spark, sweep_lake, tmp_path):
    """The advise stage on the held-out configs' traces (both tiers in the lake): a what-if that only
    moves files to another tier carries the lake's measured speed-up of that move; most such moves
    go to the tier the lake measured faster (staying put would be right on none of them), printed
    beside the better blind move over the lake's feature groups; and a sweep job's report shows
    the advice with predicted and measured speed-ups."""
    import pyspark.sql.functions as F

    from features.placement_labels import data_files
    from iolake.cli import main
    from schemas.placement_labels import FEATURES

    lake = sweep_lake["lake"]
    assert "[advise] 180 jobs advised with bandwidth model v1" in sweep_lake["log"]
    adv = spark.read.format("delta").load(str(lake / "gold/tuning_advice"))
    moves = adv.where(F.col("measured_speedup").isNotNull()).collect()
    assert len(moves) >= 20, "the lake measured both tiers for many advised moves"
    right = sum(r.measured_speedup > 1 for r in moves) / len(moves)
    # the blind rule: move every data file to the other tier; measured over feature groups on both tiers
    ff = data_files(spark.read.format("delta").load(str(lake / "silver/file_features")))
    per = (
        ff.groupBy(*FEATURES)
        .pivot("tier", ["bb", "pfs"])
        .agg(F.avg("bandwidth_mib_s"))
        .dropna()
        .collect()
    )
    blind = sum((r.bb > r.pfs) for r in per) / len(
        per
    )  # moving a pfs file to bb helps in this share
    blind = max(blind, 1 - blind)  # the better of the two blind moves
    print(
        f"\n[sweep] advised tier moves measured faster in the lake: {right:.3f} of {len(moves)} "
        f"(best blind move: {blind:.3f} of {len(per)} feature groups)"
    )
    assert (
        right > 0.5
    )  # most advised moves help: staying put is the better answer on fewer than half
    log_id = moves[0].log_id
    html = tmp_path / "sweep.html"
    assert main(["report", log_id, "--lake", str(lake), "--out", str(html)]) == 0
    text = html.read_text()
    assert 'data-kind="what_if"' in text and "measured in this lake:" in text
