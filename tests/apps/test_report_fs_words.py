"""The report's and the text summary's recommendations follow the job's file systems (bronze/files
`fs_type`): a GPFS job's pages name no `lfs` command, a Lustre job's do. The lake is three real
Delta tables written with delta-rs, holding only the columns the report reads."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from apps.report import LakeReader, build, render, to_text
from schemas import TABLES

TAGS = ("stragglers", "misaligned_file", "shared_file_time_imbalance")


def _lake(root, fs_type: str, lustre_records: bool = False) -> str:
    log = "A" * 64
    if (
        lustre_records
    ):  # Darshan's LUSTRE module saw the file: on Lustre whatever the mount table says
        write_deltalake(
            TABLES["lustre"].path(str(root)),
            pa.table(
                {"log_id": [log], "job_month": ["2026-11"], "record_id": pa.array([1], pa.int64())}
            ),
        )
    write_deltalake(
        TABLES["jobs"].path(str(root)),
        pa.table(
            {
                "log_id": [log],
                "job_month": ["2026-11"],
                "jobid": pa.array([42], pa.int64()),
                "nprocs": pa.array([64], pa.int64()),
                "exe": ["/bin/app"],
            }
        ),
    )
    write_deltalake(
        TABLES["files"].path(str(root)),
        pa.table(
            {
                "log_id": [log, log],
                "job_month": ["2026-11"] * 2,
                "record_id": pa.array([1, 2], pa.int64()),
                "name": ["/data/out.h5", "/etc/hosts"],
                "fs_type": [fs_type, "ext4"],
            }
        ),
    )
    n = len(TAGS)
    write_deltalake(
        TABLES["bottleneck_tags"].path(str(root)),
        pa.table(
            {
                "log_id": [log] * n,
                "job_month": ["2026-11"] * n,
                "tag": list(TAGS),
                "severity": ["warn"] * n,
                "metric": ["m"] * n,
                "value": [1.0] * n,
                "threshold_name": ["tags.x"] * n,
                "threshold": [0.5] * n,
                "evidence": [["/data/out.h5"]] * n,
                "message": ["fired"] * n,
            }
        ),
    )
    return log


@pytest.mark.parametrize(
    ("fs_type", "lustre_records", "lfs"),
    [("gpfs", False, False), ("lustre", False, True), ("overlay", True, True)],
)
def test_recommendations_name_lfs_only_for_a_job_on_lustre(tmp_path, fs_type, lustre_records, lfs):
    from iolake.config import load_config

    log = _lake(tmp_path, fs_type, lustre_records)
    reader = LakeReader(load_config("local", overrides={"lake": {"root": str(tmp_path)}}))
    report = build(reader, log)
    text, html = to_text(report), render(report)
    recs = [t["recommendation"] for t in report.tags]
    assert len(recs) == 3 and all(recs)
    assert ("lfs setstripe" in text) is lfs and ("lfs setstripe" in html) is lfs
    assert all(("lfs setstripe" in r) is lfs for r in recs)
    assert ("mmlsattr -L" in text) is (fs_type == "gpfs")  # GPFS: its own words instead


def test_a_move_predicted_slower_is_marked_slower_on_the_page_and_in_the_text():
    from tests.apps.test_report_format import _report, _what_if

    report = _report()
    report.advice = [_what_if(1, 0.58, advised="POSIX, file per process, 4 KiB transfers, on bb")]
    report.advice[0]["message"] = (
        "the placement model advises tier bb (probability 0.70); the bandwidth model predicts "
        "0.58x (slower: 120.0 -> 69.6 MiB/s): move the file to tier bb"
    )
    # one file: its message says it; a group: the median too
    assert "[what_if]: the placement model advises tier bb" in to_text(report)
    report.advice.append(dict(report.advice[0], item="2", file_name="/scratch/out.00002"))
    assert "[what_if] (2 files), median predicted 0.58x (slower): the placement" in to_text(report)
    html = render(report)
    cell = html[html.index('class="n advice-predicted"') :]
    assert cell[: cell.index("</td>")].endswith("0.58×<br><small>(slower)</small>")
    for a in report.advice:
        a["predicted_speedup"] = 1.9
    assert "(slower)" not in to_text(report) and "(slower)" not in render(report)


def test_a_trace_without_a_job_id_is_named_by_its_format_not_job_none(tmp_path):
    from iolake.config import load_config

    log = "B" * 64
    write_deltalake(
        TABLES["jobs"].path(str(tmp_path)),
        pa.table({"log_id": [log], "job_month": ["2021-03"], "nprocs": pa.array([2], pa.int64())}),
    )
    write_deltalake(
        TABLES["logs"].path(str(tmp_path)),
        pa.table({"log_id": [log], "job_month": ["2021-03"], "format": ["recorder"]}),
    )
    reader = LakeReader(load_config("local", overrides={"lake": {"root": str(tmp_path)}}))
    report = build(reader, log)
    assert report.title == "Recorder trace · log BBBBBBBBBBBB"
    assert dict(report.summary)["jobid"] == "—" and "None" not in to_text(report)
