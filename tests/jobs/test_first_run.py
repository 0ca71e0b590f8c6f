"""The first run a new user makes: `iolake run` on the sample logs shipped in the darshan wheel,
with nothing else (no shared data, no labels of their own). The sample logs come from one file
system, so the lake yields no two-tier label; the shipped IOR-sweep benchmark table must then
train all three models, promote them, and score the sample logs, and `iolake report` must show
the placement plan with predicted bandwidth per tier."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a whole run with training: 5 minutes on 2 cores


@pytest.fixture(scope="module")
def first_run(spark, tmp_path_factory):
    from tests.support.lakes import first_run_lake

    return first_run_lake(tmp_path_factory)  # built once per session: test_tags reads it too


def _table(spark, lake: Path, name: str):
    return spark.read.format("delta").load(str(lake / name))


def test_first_run_labels_from_the_shipped_benchmark(first_run):
    out = first_run["out"]
    assert "logs: ok 6, partial 0, quarantined 0" in out
    assert "labels from models.default_benchmark = iosweep" in out
    # the lake itself gave too few two-tier groups, as the sample logs are from one tier
    assert "[labels] the lake gives 0 two-tier label groups" in out


def test_first_run_registers_three_champions(first_run):
    import mlflow
    from mlflow import MlflowClient

    mlflow.set_registry_uri(f"sqlite:///{first_run['lake']}/mlflow.db")
    client = MlflowClient(registry_uri=f"sqlite:///{first_run['lake']}/mlflow.db")
    for name in ("iolake-placement", "iolake-bandwidth", "iolake-job-bandwidth"):
        mv = client.get_model_version_by_alias(name, "champion")
        assert str(mv.version) == "1"
        assert f"{name}@champion: v1" in first_run["out"]
    assert "mlflow ui --backend-store-uri sqlite:///" in first_run["out"]
    assert "the whole lake (the fleet marts as a page): iolake fleet --lake " in first_run["out"]


def test_first_run_bandwidth_models_stand_beside_the_true_parameter_reference(first_run):
    from mlflow import MlflowClient

    client = MlflowClient(
        tracking_uri=f"sqlite:///{first_run['lake']}/mlflow.db",
        registry_uri=f"sqlite:///{first_run['lake']}/mlflow.db",
    )
    for level, name in (("file", "iolake-bandwidth"), ("job", "iolake-job-bandwidth")):
        assert (
            f"[train] bandwidth/{level} reference: lightgbm on the benchmark's own parameters"
            in first_run["out"]
        )
        run = client.get_run(client.get_model_version_by_alias(name, "champion").run_id)
        ref, base = (
            run.data.metrics["reference_mdape_pct_mean"],
            run.data.metrics["baseline_mdape_pct_mean"],
        )
        assert 0 < ref < base, (
            level,
            ref,
            base,
        )  # the benchmark's parameters explain more than the median rule
        assert "reference_r2_log_mean" in run.data.metrics


def test_first_run_scores_every_data_file_and_job(spark, first_run):
    import pyspark.sql.functions as F

    lake = first_run["lake"]
    ff = _table(spark, lake, "silver/file_features")
    data = ff.where((F.col("reads") + F.col("writes") > 0) & (F.col("interface") != "STDIO"))
    n_data = data.count()
    assert n_data > 0
    place = _table(spark, lake, "gold/placement_predictions")
    assert place.count() == n_data
    assert {r.predicted_tier for r in place.select("predicted_tier").distinct().collect()} <= {
        "bb",
        "pfs",
    }
    bw = _table(spark, lake, "gold/bandwidth_predictions").collect()
    assert len(bw) == n_data
    for r in bw:
        assert set(r.bandwidth_by_tier) == {"bb", "pfs"}
        assert r.best_tier == max(r.bandwidth_by_tier, key=r.bandwidth_by_tier.get)
        assert r.best_bandwidth_mib_s == max(r.bandwidth_by_tier.values())
        if (
            r.tier in r.bandwidth_by_tier
        ):  # a tier the model knows: the speed-up of the best over it
            assert r.predicted_bandwidth_mib_s == pytest.approx(r.bandwidth_by_tier[r.tier])
            assert r.speedup == pytest.approx(r.best_bandwidth_mib_s / r.bandwidth_by_tier[r.tier])
        else:
            assert r.predicted_bandwidth_mib_s is None and r.speedup is None
    jobs = _table(spark, lake, "gold/job_bandwidth_predictions").collect()
    assert len(jobs) == 6
    assert all(set(j.throughput_by_tier) == {"bb", "pfs"} for j in jobs)


def test_first_run_report_shows_bandwidth_per_tier(spark, first_run, tmp_path):
    from iolake.cli import main

    lake = first_run["lake"]
    log_id = _table(spark, lake, "gold/bandwidth_predictions").first().log_id
    html = tmp_path / "r.html"
    assert (
        main(
            [
                "report",
                log_id,
                "--lake",
                str(lake),
                "--conf-dir",
                str(first_run["conf"]),
                "--out",
                str(html),
            ]
        )
        == 0
    )
    text = html.read_text()
    assert "predicted MiB/s on bb" in text and "predicted MiB/s on pfs" in text
    assert "iolake-bandwidth v1" in text and "iolake-placement v1" in text
    # the plan says what its models learnt from, plainly: another machine's benchmark
    assert "trained on the shipped IOR sweep of a 2-core VM (tmpfs vs ext4)" in text
    assert 'class="provenance foreign"' in text


def test_first_run_advises_every_job(spark, first_run):
    """gold/tuning_advice: every featured job has a row; what-ifs name the bandwidth champion and
    change something; a stripe row per job with a Lustre stripe setting; a tag row per fired tag."""
    import pyspark.sql.functions as F

    lake = first_run["lake"]
    adv = _table(spark, lake, "gold/tuning_advice")
    jobs = _table(spark, lake, "silver/job_features")
    assert {r.log_id for r in adv.select("log_id").distinct().collect()} == {
        r.log_id for r in jobs.select("log_id").collect()
    }
    assert {r.advised_with for r in adv.select("advised_with").distinct().collect()} == {"1"}
    what_ifs = adv.where("kind = 'what_if'").collect()
    assert what_ifs, "the sample logs' data files get what-if advice"
    for r in what_ifs:
        assert (r.model_name, r.model_version) == ("iolake-bandwidth", "1")
        # the first run trains on the shipped IOR sweep, and every row says so
        assert (r.model_alias, r.training_origin) == ("champion", "shipped_benchmark")
        assert r.trained_on.startswith("benchmark iosweep (shipped: ")
        assert r.current != r.advised
        # the models' verdict (features/what_if.verdict): a predicted gain, or the placement
        # model's move said as such when the bandwidth model predicts it no faster
        gain = r.predicted_speedup is not None and r.predicted_speedup > 1
        assert r.message.startswith(
            "predicted " if gain else "the placement model advises tier "
        ), r.message
        moved = (
            "placement model: " in " ".join(r.evidence)
            and r.current.rsplit(" on ", 1)[1] != r.advised.rsplit(" on ", 1)[1]
        )
        assert (
            moved or r.predicted_speedup >= 1.1
        )  # advise.min_speedup, unless the placement model moved it
    # a suspect log's throughput is no run history (features/suspect.py): DCA-IO sees the others
    lustre = jobs.where(F.col("stripe_count").isNotNull() & ~F.col("suspect")).toPandas()
    striped = {r.log_id for r in adv.where("kind = 'stripe'").collect()}
    assert striped and striped <= set(lustre.log_id)
    for j in lustre[~lustre.log_id.isin(striped)].itertuples():
        # no stripe row only where DCA-IO has nothing to go on: the application's first run, and no
        # earlier job of another application with the same process count and a stripe setting
        earlier = lustre[(lustre.start_time < j.start_time)]
        assert not len(earlier[earlier.program == j.program])
        assert not len(earlier[(earlier.program != j.program) & (earlier.nprocs == j.nprocs)])
    for r in adv.where("kind = 'stripe'").collect():
        assert r.message.startswith("DCA-IO (") and r.advised.startswith("stripe count ")
        assert "#DW" not in r.message  # the shipped site profile
        # a change comes with the profile's command; keeping the setting needs none
        assert "lfs setstripe" in r.message or ": keep stripe count" in r.message, r.message
    fired = _table(spark, lake, "silver/bottleneck_tags").where("tag != 'no_issue'")
    assert adv.where("kind = 'tag'").count() == fired.count()


def test_first_run_report_shows_the_advice(spark, first_run, tmp_path):
    from iolake.cli import main

    lake = first_run["lake"]
    log_id = _table(spark, lake, "gold/tuning_advice").where("kind = 'what_if'").first().log_id
    html = tmp_path / "a.html"
    assert (
        main(
            [
                "report",
                log_id,
                "--lake",
                str(lake),
                "--conf-dir",
                str(first_run["conf"]),
                "--out",
                str(html),
            ]
        )
        == 0
    )
    text = html.read_text()
    assert 'id="advice"' in text and 'data-kind="what_if"' in text and "no-advice" not in text


def test_advise_command_gives_the_stage_s_tag_advice(spark, first_run, tmp_path):
    """`iolake advise LOG` on a sample log (decoded afresh, not read from the lake) gives the same
    tag advice the pipeline stored for the same log, what-ifs from the same champion, and the same
    precedents (the lake's runs of its application; a log with one when the lake has any)."""
    import contextlib
    import io

    import pandas as pd

    from iolake.cli import main, sample_inputs

    lake = first_run["lake"]
    logs = _table(spark, lake, "bronze/logs").select("log_id", "source_uri").collect()
    tagged = {
        r.log_id for r in _table(spark, lake, "gold/tuning_advice").where("kind = 'tag'").collect()
    }
    with_precedent = {
        r.log_id
        for r in _table(spark, lake, "gold/tuning_advice")
        .where("precedent_runs is not null")
        .collect()
    }
    log = next(
        (r for r in logs if r.log_id in tagged & with_precedent),
        next(r for r in logs if r.log_id in tagged),
    )
    path = next(
        Path(d) / Path(log.source_uri).name
        for d in sample_inputs()
        if (Path(d) / Path(log.source_uri).name).exists()
    )
    out_csv, out = tmp_path / "advice.csv", io.StringIO()
    with contextlib.redirect_stdout(out):
        assert (
            main(
                [
                    "advise",
                    str(path),
                    "--lake",
                    str(lake),
                    "--conf-dir",
                    str(first_run["conf"]),
                    "--out",
                    str(out_csv),
                ]
            )
            == 0
        )
    rows = pd.read_csv(out_csv, dtype={"model_version": str, "item": str})
    stage = _table(spark, lake, "gold/tuning_advice").where(f"log_id = '{log.log_id}'").toPandas()
    assert set(rows[rows.kind == "tag"].item) == set(stage[stage.kind == "tag"].item)
    assert set(rows[rows.kind == "what_if"].model_version.astype(str)) <= {"1"}
    assert str(path) in out.getvalue()
    cols = ["precedent_speedup", "precedent_runs", "precedent_setting"]
    tag_rows = lambda df: (  # noqa: E731
        df[df.kind == "tag"].set_index("item")[cols].astype(object).where(lambda d: d.notna(), None)
    )
    assert tag_rows(rows).sort_index().to_dict("index") == tag_rows(stage).sort_index().to_dict(
        "index"
    )


def test_second_run_trains_and_scores_nothing_new(first_run):
    import contextlib
    import io

    from iolake.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert (
            main(["run", "--lake", str(first_run["lake"]), "--conf-dir", str(first_run["conf"])])
            == 0
        )
    text = out.getvalue()
    assert "[train] placement: already trained" in text
    assert "[train] bandwidth/file: already trained" in text
    # the score marks hold: nothing committed since the first run, the same version
    assert "(v1): every file scored" in text and "(v1): every job scored" in text
    assert "[advise] every job already advised (advised_with 1)" in text


def test_advise_looks_for_jobs_in_the_months_committed_since_its_mark(spark, first_run, tmp_path):
    """After the first run the advice table carries advise's mark (champion included): a rerun
    with nothing committed looks nowhere and commits nothing; one job's advice deleted makes its
    month, and only it, the next run's search, which advises that job again and no other."""
    import shutil

    from delta.tables import DeltaTable

    from iolake.config import load_config
    from iolake.lake import read_table, table_version
    from iolake.lake.changes import read_mark
    from iolake.runner import run_stage
    from schemas import GOLD

    spec = GOLD["tuning_advice"]
    lake = tmp_path / "lake"
    shutil.copytree(first_run["lake"], lake)
    root = str(lake)
    conf = load_config("local", overrides={"lake": {"root": root}})
    mark = read_mark(spark, spec, root, "advise")
    assert mark["from"] == "silver/job_features" and mark["advised_with"] == "1"

    lines: list[str] = []
    version = table_version(spark, spec, root)
    assert run_stage(spark, conf, "advise", echo=lines.append)["jobs"] == 0
    assert "[advise] every job already advised (advised_with 1)" in lines
    assert not any("looked for" in line for line in lines)
    assert table_version(spark, spec, root) == version  # no rows, no new mark

    rows = read_table(spark, spec, root)
    log_id, month = sorted(tuple(r) for r in rows.select("log_id", "job_month").collect())[0]
    cols = ("log_id", "kind", "item", "current", "advised", "message", "advised_with")
    want = sorted(map(tuple, rows.where(f"log_id = '{log_id}'").select(*cols).collect()))
    n_rows = rows.count()
    DeltaTable.forPath(spark, spec.path(root)).delete(f"log_id = '{log_id}'")

    lines.clear()
    assert run_stage(spark, conf, "advise", echo=lines.append)["jobs"] == 1
    assert [line for line in lines if "looked for" in line] == [
        f"[advise] jobs to advise looked for in {month}: the months committed since its last run"
    ]
    got = read_table(spark, spec, root)
    assert got.count() == n_rows
    assert sorted(map(tuple, got.where(f"log_id = '{log_id}'").select(*cols).collect())) == want
    assert read_mark(spark, spec, root, "advise")["done_version"] > mark["done_version"]
