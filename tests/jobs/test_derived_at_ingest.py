"""Per-log results ingest computes where it decodes a log (bronze/op_patterns, file_rollups, phases)
against the features and tags stages' own Spark passes, on a lake ingested half with them off."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from iolake.config import load_config
from iolake.lake import read_table, table_exists
from jobs import features, ingest, tags
from schemas import BRONZE, SILVER

pytestmark = pytest.mark.slow
OFF = {"covers": False, "patterns": False, "phases": False, "rollups": False}
DERIVED = {"covers", "op_patterns", "phases", "file_rollups"}


def _conf(lake: Path, **over):
    return load_config(
        "local", overrides={"lake": {"root": str(lake)}, "gates": {"enabled": False}, **over}
    )


def _bronze(spark, lake: Path, names) -> dict:
    return {
        f"bronze/{t}": read_table(spark, BRONZE[t], str(lake))
        if table_exists(spark, BRONZE[t], str(lake))
        else spark.createDataFrame([], BRONZE[t].struct)
        for t in names
    }


def _sorted(df: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    return df.sort_values(key).reset_index(drop=True)


def _dxt_log(folder: Path, name: str, starts: list[float]) -> None:
    """A small DXT log (`tests/support/darshan_writer.py`): one rank's 4 KiB writes at `starts`."""
    import io

    from tests.support.darshan_writer import DXT_POSIX, POSIX, dxt_record, write_log

    fh = io.BytesIO()
    seg = [(4096 * k, 4096, t, t + 0.25) for k, t in enumerate(starts)]
    write_log(
        fh, {POSIX: [bytes(704)], DXT_POSIX: [dxt_record(1, 0, b"nid1", seg, seg[:2])]}, {POSIX: 4}
    )
    (folder / name).write_bytes(fh.getvalue())


@pytest.fixture(scope="module")
def mixed_lake(spark, tmp_path_factory):
    """pydarshan's example logs and two small DXT logs with several I/O phases; the first half
    ingested with every derived table off (as a lake ingested before them), the second half, with
    pydarshan's DXT log, with them on."""
    import darshan

    tmp = tmp_path_factory.mktemp("derived")
    logs = sorted((Path(darshan.__file__).parent / "examples" / "example_logs").glob("*.darshan"))
    halves = [tmp / "old", tmp / "new"]
    for k, folder in enumerate(halves):
        folder.mkdir()
        for p in logs[1 - k :: 2]:  # dxt.darshan (first) in the new half
            (folder / p.name).symlink_to(p)
        _dxt_log(folder, f"phased{k}.darshan", [0.0, 0.5, 5.0 + k, 5.5 + k, 12.0, 12.1 + k])
    lake = tmp / "lake"
    quiet = {"echo": lambda *_: None}
    ingest.run(spark, _conf(lake, ingest=OFF), [str(halves[0])], **quiet)
    ingest.run(spark, _conf(lake), [str(halves[1])], **quiet)
    led = read_table(spark, BRONZE["logs"], str(lake)).where("status != 'quarantined'").collect()
    new = {r.log_id for r in led if Path(r.source_uri).parent == halves[1]}
    conf = _conf(lake, tags={"io_phases": 2})  # the small logs' 3 phases fire many_io_phases
    return lake, conf, led, new, features.run(spark, conf, **quiet), tags.run(spark, conf, **quiet)


def _phased(spark, lake: Path) -> set[str]:
    """The logs bronze/phases has rows for (ingest found timed reads or writes in them)."""
    return {
        r.log_id
        for r in read_table(spark, BRONZE["phases"], str(lake))
        .select("log_id")
        .distinct()
        .collect()
    }


def _tags_spark_pass(spark, lake: Path, conf) -> pd.DataFrame:
    """silver/bottleneck_tags as the stage's Spark pass computes them for every log of the lake."""
    names = ("files", "posix", "mpiio", "stdio", "lustre", "heatmap", "io_ops")
    inputs = {
        **_bronze(spark, lake, names),
        **{
            f"silver/{t}": read_table(spark, SILVER[t], str(lake))
            for t in ("file_features", "job_features")
        },
    }
    return tags.transform(inputs, conf)[tags.OUT].toPandas()


def _same_tags(spark, lake: Path, want: pd.DataFrame) -> None:
    got = read_table(spark, SILVER["bottleneck_tags"], str(lake)).toPandas()[list(want.columns)]
    key = ["log_id", "tag"]
    pd.testing.assert_frame_equal(_sorted(got, key).astype(str), _sorted(want, key).astype(str))


def test_ingest_marks_only_the_logs_it_derived_for(mixed_lake):
    _, _, led, new, _, _ = mixed_lake
    for r in led:
        keys = set(r.row_counts or {})
        assert (DERIVED <= keys) is (r.log_id in new), r.source_uri
        assert not (DERIVED & keys) or r.log_id in new


def test_features_take_ingest_patterns_and_spark_the_rest(spark, mixed_lake):
    lake, conf, led, new, feat, _ = mixed_lake
    assert (
        feat["patterns_from_ingest"] == len(new)
        and feat["patterns_spark_pass"] == len(led) - len(new) > 0
    )
    assert feat["rollups_from_ingest"] == len(new) and feat["rollups_spark_pass"] == len(led) - len(
        new
    )
    rolled = {
        r.log_id
        for r in read_table(spark, BRONZE["file_rollups"], str(lake)).select("log_id").collect()
    }
    assert rolled and rolled <= new
    names = ("jobs", "files", "posix", "mpiio", "stdio", "h5f", "h5d", "lustre", "io_ops")
    want = features.transform(_bronze(spark, lake, names), conf)["silver/file_features"].toPandas()
    got = read_table(spark, SILVER["file_features"], str(lake)).toPandas()[list(want.columns)]
    assert (
        set(got[got.io_type_source == "ops"].log_id) & new
    )  # dxt.darshan's pattern, from ingest's counts
    pd.testing.assert_frame_equal(
        _sorted(got, ["log_id", "record_id"]),
        _sorted(want, ["log_id", "record_id"]),
        check_dtype=False,
    )


def test_tags_take_ingest_phases_and_spark_the_rest(spark, mixed_lake):
    lake, conf, led, new, _, tagged = mixed_lake
    assert (
        tagged["phases_from_ingest"] == len(new)
        and tagged["phases_spark_pass"] == len(led) - len(new) > 0
    )
    assert (
        len(_phased(spark, lake)) >= 2 and _phased(spark, lake) <= new
    )  # dxt.darshan and phased1 among them
    want = _tags_spark_pass(spark, lake, conf)
    fired = set(want[want.tag == "many_io_phases"].log_id)
    assert (
        fired & new and fired - new
    )  # phases from ingest and from the Spark pass both fire the rule
    _same_tags(spark, lake, want)


def test_tags_with_another_gap_phase_in_spark(spark, mixed_lake, tmp_path):
    """A config whose gap is not the one ingest phased with takes the Spark pass for every log with
    phases from ingest (a log ingest found no traced op in has none at any gap)."""
    import shutil

    lake, _, led, new, _, _ = mixed_lake
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    shutil.rmtree(copy / "silver" / "bottleneck_tags")
    conf = _conf(copy, tags={"io_phase_gap_s": 0.25, "io_phases": 2})
    summary = tags.run(spark, conf, echo=lambda *_: None)
    phased = _phased(spark, lake)
    assert summary["phases_spark_pass"] == len(led) - len(new) + len(phased)
    assert summary["phases_from_ingest"] == len(new) - len(phased) > 0
    _same_tags(spark, copy, _tags_spark_pass(spark, copy, conf))
