"""The `ops/runs` table: every `iolake run` / `iolake ingest` appends one row, failed runs too."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolake.cli import main, sample_inputs
from iolake.pipeline import load_pipeline
from schemas.runs import SPEC as RUNS


def _rows(spark, lake: Path) -> list:
    return spark.read.format("delta").load(RUNS.path(str(lake))).orderBy("started").collect()


@pytest.fixture(scope="module")
def one_log() -> str:
    return str(Path(sample_inputs()[0]) / "noposix.darshan")


def _pipeline(tmp_path: Path, names: tuple[str, ...]) -> Path:
    """pipeline.yaml cut down to `names` (the real stages, in the real order)."""
    import yaml

    from iolake.pipeline import PIPELINE_FILE

    data = yaml.safe_load(PIPELINE_FILE.read_text())
    data["stages"] = [s for s in data["stages"] if s["name"] in names]
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_successful_run_records_stage_times(spark, tmp_path, one_log, capsys):
    """`iolake run` over ingest -> features (the whole pipeline costs minutes; the row is the same)."""
    from iolake.cli import _run
    from iolake.config import load_config

    lake = tmp_path / "lake"
    pipeline = _pipeline(tmp_path, ("ingest", "features"))
    conf = load_config(
        "local", overrides={"lake": {"root": str(lake)}, "gates": {"enabled": False}}
    )
    assert _run(conf, [one_log], pipeline) == 0
    out = capsys.readouterr().out
    assert f"recorded in {RUNS.path(str(lake))}" in out
    (row,) = _rows(spark, lake)
    assert (
        row.command == "run"
        and row.status == "succeeded"
        and row.exit_code == 0
        and row.error is None
    )
    assert row.run_id in out and row.env == "local" and row.lake == str(lake)
    assert row.started <= row.finished and row.duration_s > 0
    assert row.config_digest == conf.digest()
    expected = [s.name for s in load_pipeline(pipeline)]
    assert expected == ["ingest", "features"]
    assert row.stages == expected  # pipeline order
    # the map is stored in pipeline order (map_keys keeps it; Python dicts from collect() do not)
    import pyspark.sql.functions as F

    keys = (
        spark.read.format("delta")
        .load(RUNS.path(str(lake)))
        .select(F.map_keys("stage_seconds"))
        .first()[0]
    )
    assert keys == expected and set(row.stage_seconds) == set(expected)
    assert all(v > 0 for v in row.stage_seconds.values())
    assert sum(row.stage_seconds.values()) <= row.duration_s + 0.01
    assert "silver/file_features" in row.table_versions
    assert row.ingest_counts["listed"] == 1 and row.ingest_counts["new"] == 1
    assert (
        row.ingest_counts["ok"] + row.ingest_counts["partial"] + row.ingest_counts["quarantined"]
        == 1
    )
    assert row.ingest_counts["skipped"] == 0
    # versions after the run: every table the run wrote, as Delta reports them
    from delta.tables import DeltaTable

    assert "bronze/logs" in row.table_versions
    for name, version in row.table_versions.items():
        latest = DeltaTable.forPath(spark, f"{lake}/{name}").history(1).collect()[0]["version"]
        assert version == latest, name
    # the commits of the run carry the same run id
    hist = DeltaTable.forPath(spark, f"{lake}/bronze/logs").history().collect()
    assert any(row.run_id in (h.userMetadata or "") for h in hist)

    # an `iolake ingest` of the same log: a second row, the log skipped
    assert main(["ingest", one_log, "--lake", str(lake)]) == 0
    rows = _rows(spark, lake)
    assert len(rows) == 2
    second = rows[1]
    assert (
        second.command == "ingest" and second.status == "succeeded" and second.run_id != row.run_id
    )
    assert second.ingest_counts["listed"] == 1 and second.ingest_counts["new"] == 0
    assert second.ingest_counts["skipped"] == 1 and second.stages == ["ingest"]


def test_failed_run_records_failure_and_exit_code(spark, tmp_path, capsys):
    lake = tmp_path / "lake"
    missing = str(tmp_path / "no-such-drop")
    code = main(["run", missing, "--lake", str(lake)])
    err = capsys.readouterr().err
    assert code == 2 and "input not found" in err
    (row,) = _rows(spark, lake)
    assert row.status == "failed" and row.exit_code == code
    assert "FileNotFoundError" in row.error and missing in row.error
    assert row.stages == ["ingest"]  # the stage that failed, with its time
    assert row.ingest_counts is None
    assert row.inputs == [missing]
    # the ingest stage module (spark-submit entry) exits with the same code
    from jobs.ingest import main as ingest_main

    assert ingest_main([missing, "--lake", str(lake)]) == 2


def test_unrecordable_run_keeps_its_own_outcome(spark, tmp_path, capsys):
    """A run row that cannot be written is reported; the run's error and exit code stand."""
    lake = tmp_path / "lake"
    blocker = Path(RUNS.path(str(lake)))
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a Delta table")  # a file where the table's folder should be
    code = main(["run", str(tmp_path / "no-such-drop"), "--lake", str(lake)])
    err = capsys.readouterr().err
    assert code == 2
    assert "input not found" in err  # the original error, not the recording failure
    assert "could not be recorded" in err


def test_run_skips_the_stages_named_and_records_only_those_run(spark, tmp_path, one_log, capsys):
    """`iolake run --skip features`: ingest runs, features does not (no table, no time)."""
    from iolake.cli import _run
    from iolake.config import load_config
    from iolake.lake import arrow
    from schemas import TABLES

    lake = tmp_path / "lake"
    pipeline = _pipeline(tmp_path, ("ingest", "features"))
    conf = load_config(
        "local", overrides={"lake": {"root": str(lake)}, "gates": {"enabled": False}}
    )
    assert _run(conf, [one_log], pipeline, skip={"features"}) == 0
    out = capsys.readouterr().out
    assert "[features] skipped: --skip\n" in out and "[ingest] done in" in out
    (row,) = _rows(spark, lake)
    assert row.status == "succeeded" and row.stages == ["ingest"]
    assert list(row.stage_seconds) == ["ingest"]
    assert arrow.exists(lake, TABLES["jobs"]) and not arrow.exists(lake, TABLES["job_features"])


def test_run_skipping_ingest_does_not_read_the_inputs(spark, tmp_path, capsys):
    from iolake.cli import _run
    from iolake.config import load_config

    lake = tmp_path / "lake"
    conf = load_config("local", overrides={"lake": {"root": str(lake)}})
    missing = str(tmp_path / "no-such-drop")
    assert _run(conf, [missing], _pipeline(tmp_path, ("ingest",)), skip={"ingest"}) == 0
    out, err = capsys.readouterr()
    assert "[ingest] skipped: --skip (the inputs are not read)" in out
    assert "input not found" not in out + err
    (row,) = _rows(spark, lake)
    assert row.status == "succeeded" and row.stages == []


def test_run_skip_takes_names_and_lists_and_names_the_stages_on_a_typo(capsys):
    from iolake.cli import parser

    args = parser().parse_args(["run", "--skip", "train,score", "--skip", "fleet"])
    assert args.skip == [["train", "score"], ["fleet"]]
    with pytest.raises(SystemExit) as e:
        parser().parse_args(["run", "--skip", "train,flete"])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert "--skip: flete: not a stage of pipeline.yaml" in err
    assert ", ".join(s.name for s in load_pipeline()) in err
