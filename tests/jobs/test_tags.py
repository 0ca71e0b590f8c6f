"""tags stage end to end (in the first run's `iolake run`) on the darshan wheel's example logs:
every job tagged, known bottlenecks found, re-run idle."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolake.config import load_config
from iolake.lake import read_table, table_version
from jobs import tags
from schemas import BRONZE, SILVER

pytestmark = pytest.mark.slow

SPEC = SILVER["bottleneck_tags"]


@pytest.fixture(scope="module")
def tagged_lake(spark, tmp_path_factory):
    """The first run's lake (`tests.support.lakes.first_run_lake`: `iolake run` on the wheel's 6
    example logs, shared with test_first_run): its tags stage is the one under test; (conf, new logs the
    stage tagged, rows)."""
    import re

    from tests.support.lakes import first_run_lake

    run = first_run_lake(tmp_path_factory)
    conf = load_config("local", overrides={"lake": {"root": str(run["lake"])}})
    tagged = re.search(r"\[tags\] (\d+) new logs: silver/bottleneck_tags", run["out"])
    assert tagged, run["out"][-4000:]
    ledger = (
        read_table(spark, BRONZE["logs"], conf.lake.root).select("log_id", "source_uri").toPandas()
    )
    names = {r.log_id: Path(r.source_uri).name for r in ledger.itertuples()}
    rows = read_table(spark, SPEC, conf.lake.root).toPandas()
    rows["log"] = rows.log_id.map(names)
    return conf, int(tagged.group(1)), rows


def _tags(rows, log: str) -> dict:
    return {r.tag: r for r in rows[rows.log == log].itertuples()}


def test_tags_every_featured_job_has_rows(spark, tagged_lake):
    conf, n_tagged, rows = tagged_lake
    jobs = read_table(spark, SILVER["job_features"], conf.lake.root).select("log_id").toPandas()
    assert n_tagged == len(jobs) == 6
    assert set(rows.log_id) == set(jobs.log_id)
    assert not rows.duplicated(["log_id", "tag"]).any()
    assert rows.threshold_name.dropna().str.startswith("tags.").all()


def test_tags_known_bottlenecks_of_the_example_logs(tagged_lake):
    _, _, rows = tagged_lake
    # MACSio through HDF5: 16 ranks, rank 0 writes 98% of one shared file in < 1 MiB independent writes
    macsio = _tags(rows, "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan")
    assert {
        "small_writes",
        "shared_file_imbalance",
        "rank0_heavy",
        "no_collective_shared_writes",
    } <= set(macsio)
    assert (
        macsio["small_writes"].value > 0.99
        and macsio["small_writes"].evidence[0] == "/tmp/test/macsio_hdf5_000.h5"
    )
    assert macsio["shared_file_imbalance"].value > 0.9
    # a Java workflow traced with DXT: every read is small, rank 0 sits for hours in metadata calls
    dxt = _tags(rows, "dxt.darshan")
    assert {"small_reads", "metadata_heavy"} <= set(dxt)
    assert (
        dxt["metadata_heavy"].severity == "high"
        and list(dxt["metadata_heavy"].evidence)[0] == "rank 0"
    )
    # all of this job's bytes go through STDIO
    assert _tags(rows, "noposix.darshan")["stdio_heavy"].value == 1.0
    # 2048 ranks writing one file each: the slowest rank takes 169 times the fastest's time
    assert _tags(rows, "sample-badost.darshan")["stragglers"].value > 100


def test_tags_rerun_adds_nothing(spark, tagged_lake):
    conf, _, rows = tagged_lake
    before = table_version(spark, SPEC, conf.lake.root)
    again = tags.run(spark, conf)
    assert again["logs"] == 0
    assert table_version(spark, SPEC, conf.lake.root) == before
    assert read_table(spark, SPEC, conf.lake.root).count() == len(rows)


def test_tags_main_runs_the_stage_from_the_command_line(tagged_lake):
    conf, _, _ = tagged_lake
    assert tags.main(["--lake", conf.lake.root]) == 0  # nothing new: exits cleanly without a commit
