"""`iolake report`: the page of a job of a lake built from real logs with a hostile trace in it
(tests/support/lakes.py) — every trace string escaped, the content a reader sees, job resolution,
a table with deletion vectors, no JVM needed, and the page as headless Chromium renders it."""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pyspark.sql.functions as F
import pytest
from markupsafe import escape

from iolake.cli import main
from tests.support.lakes import HOSTILE_EXE, HOSTILE_FILE, HOSTILE_META, report_lake

pytestmark = pytest.mark.slow  # shared corpus / built lakes: `make test` only, not `make check`

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class Page(HTMLParser):
    """What a reader of the page gets: elements with their attributes, text, tags and their evidence."""

    def __init__(self, source: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.title = ""
        self.evidence: dict[str, list[str]] = {}
        self._in_title = self._in_li = False
        self._tag = None
        self.feed(source)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if tag == "title":
            self._in_title = True
        if tag == "tr":
            self._tag = a.get("data-tag")
            if self._tag is not None:
                self.evidence[self._tag] = []
        if tag == "li" and self._tag is not None:
            self._in_li = True
            self.evidence[self._tag].append("")

    def handle_endtag(self, tag):
        self._in_title = self._in_title and tag != "title"
        self._in_li = self._in_li and tag != "li"
        if tag == "tr":
            self._tag = None

    def handle_data(self, data):
        self.text.append(data)
        if self._in_title:
            self.title += data
        if self._in_li:
            self.evidence[self._tag][-1] += data

    def all(self, tag: str, cls: str | None = None) -> list[dict]:
        return [
            a
            for t, a in self.elements
            if t == tag and (cls is None or cls in (a.get("class") or "").split())
        ]

    @property
    def body_text(self) -> str:
        return "".join(self.text)


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    return report_lake(spark, tmp_path_factory)


@pytest.fixture(scope="module")
def dxt_page(lake, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reports")
    assert main(["report", lake["dxt"][:10], "--lake", lake["lake"], "--out", str(out)]) == 0
    return out / f"{lake['dxt']}.html"


def _silver(spark, lake, table: str, log_id: str):
    return (
        spark.read.format("delta").load(f"{lake['lake']}/{table}").where(F.col("log_id") == log_id)
    )


def test_report_escapes_every_string_from_the_trace(spark, lake, dxt_page):
    source = dxt_page.read_text()
    from apps.report import EVIDENCE_SHOWN, EXAMPLE_FILES, LakeReader, build, plan_groups
    from iolake.config import load_config

    tags = _silver(spark, lake, "silver/bottleneck_tags", lake["dxt"]).collect()
    assert any(HOSTILE_FILE in (t.evidence or []) for t in tags), "setup: evidence of a tag"
    # the page shows a tag's first EVIDENCE_SHOWN items and a plan group's first EXAMPLE_FILES
    in_evidence = sum(HOSTILE_FILE in (t.evidence or [])[:EVIDENCE_SHOWN] for t in tags)
    in_cover = (
        _silver(spark, lake, "silver/covering_sets", lake["dxt"])
        .where(F.col("record_id") == lake["hostile_record"])
        .count()
    )
    assert (
        _silver(spark, lake, "gold/placement_predictions", lake["dxt"])
        .where((F.col("file_name") == HOSTILE_FILE) & (F.col("model_version") == "2"))
        .count()
        == 1
    )
    report = build(
        LakeReader(load_config("local", overrides={"lake": {"root": lake["lake"]}})), lake["dxt"]
    )
    groups = plan_groups(report.plan)
    in_plan = sum(HOSTILE_FILE in g["file_names"][:EXAMPLE_FILES] for g in groups)
    assert in_evidence + in_plan >= 1, "setup: the hostile file should be on the page"

    for raw in (HOSTILE_FILE, HOSTILE_EXE, HOSTILE_META):
        assert raw not in source
    assert source.count(str(escape(HOSTILE_FILE))) == in_evidence + in_cover + in_plan
    page = Page(source)
    assert page.body_text.count(HOSTILE_FILE) == in_evidence + in_cover + in_plan
    # a reader sees each hostile string as text, literally
    for raw in (HOSTILE_FILE, HOSTILE_EXE, HOSTILE_META, "<b>note</b>"):
        assert raw in page.text
    # and the markup is the template's alone: no script, images ours (the timeline, the job-summary
    # figures: embedded PNGs), no handler, nothing external
    assert page.all("script") == [] and page.all("iframe") == [] and page.all("link") == []
    imgs = page.all("img")
    assert imgs and all(i["src"].startswith("data:image/png;base64,") for i in imgs)
    assert not [(t, k) for t, a in page.elements for k in a if k.startswith("on")]
    urls = [a[k] for _, a in page.elements for k in ("src", "href", "action") if k in a]
    assert all(u.startswith(("data:", "#")) for u in urls)


def test_report_shows_summary_tags_with_evidence_covering_set_and_newest_predictions(
    spark, lake, dxt_page
):
    page = Page(dxt_page.read_text())
    text = page.body_text
    assert f"job {lake['jobid']}" in page.title and lake["dxt"][:12] in page.title
    feat = _silver(spark, lake, "silver/job_features", lake["dxt"]).first()
    assert f"{feat.bytes_read:,} bytes" in text and f"{feat.bytes_written:,} bytes" in text

    tags = {t.tag: t for t in _silver(spark, lake, "silver/bottleneck_tags", lake["dxt"]).collect()}
    assert len(tags) >= 3
    from apps.report import EVIDENCE_SHOWN

    # each tag's first EVIDENCE_SHOWN items, then "and N more"
    assert page.evidence == {name: list(t.evidence)[:EVIDENCE_SHOWN] for name, t in tags.items()}
    for t in tags.values():
        more = len(t.evidence) - EVIDENCE_SHOWN
        assert (f"and {more} more" in text) or more <= 0
    for t in tags.values():
        assert t.message in text

    cover = _silver(spark, lake, "silver/covering_sets", lake["dxt"]).count()
    assert len(page.all("tr", "member")) == cover > 0

    v2 = _silver(spark, lake, "gold/placement_predictions", lake["dxt"]).where(
        F.col("model_version") == "2"
    )
    # the plan: one row per distinct setting, its data-files the number of files it stands for
    groups = page.all("tr", "plan-group")
    assert sum(int(g["data-files"]) for g in groups) == v2.count() > 0
    moving = v2.where(F.col("predicted_tier") != F.col("tier")).count()
    assert sum(int(g["data-files"]) for g in page.all("tr", "move")) == moving
    assert "iolake-placement v2" in text and "iolake-bandwidth v2" in text
    assert "iolake-placement v1" not in text and "iolake-bandwidth v1" not in text


def test_report_resolves_job_or_explains_why_not(spark, lake, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # a unique prefix, default output folder; noposix has no predictions and no DXT
    assert main(["report", lake["noposix"][:8], "--lake", lake["lake"]]) == 0
    page = (tmp_path / "reports" / f"{lake['noposix']}.html").read_text()
    assert 'id="no-predictions"' in page and "no timed operations" in page
    capsys.readouterr()
    # the jobid both logs carry
    assert main(["report", str(lake["jobid"]), "--lake", lake["lake"]]) == 2
    err = capsys.readouterr().err
    assert "ambiguous" in err and lake["dxt"] in err and lake["noposix"] in err
    # the quarantined log: the ledger's reason
    reason = (
        spark.read.format("delta")
        .load(f"{lake['lake']}/bronze/logs")
        .where(F.col("log_id") == lake["truncated"])
        .first()
        .reason
    )
    assert main(["report", lake["truncated"][:12], "--lake", lake["lake"]]) == 2
    err = capsys.readouterr().err
    assert "quarantined" in err and reason in err
    assert main(["report", "not-a-log", "--lake", lake["lake"]]) == 2
    assert "no job matches" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [f"{lake['noposix']}.html"]


def test_report_text_and_json_formats_print_the_findings(spark, lake, capsys):
    """`--format text` prints the Drishti-like summary to stdout (no colour: not a terminal),
    `--format json` the same facts; neither writes a page."""
    tags = {t.tag: t for t in _silver(spark, lake, "silver/bottleneck_tags", lake["dxt"]).collect()}
    capsys.readouterr()
    assert main(["report", lake["dxt"][:10], "--lake", lake["lake"], "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert "\033[" not in text and max(len(line) for line in text.splitlines()) <= 100
    assert f"log {lake['dxt']}" in text and "FINDINGS (" in text
    for name, t in tags.items():
        if name != "no_issue":
            assert f"[{t.severity.upper()}]" in text and name in text
    assert main(["report", lake["dxt"][:10], "--lake", lake["lake"], "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["log_id"] == lake["dxt"]
    assert {f["tag"]: f["evidence"] for f in data["findings"]} == {
        n: list(t.evidence) for n, t in tags.items()
    }
    order = {"high": 0, "warn": 1, "info": 2}
    sev = [order[f["severity"]] for f in data["findings"]]
    assert sev == sorted(sev)
    # the DXT heat map's per-bin totals: pydarshan's job-summary heat map (200 bins over the run
    # time, get_heatmap_df) summed over ranks, read and write apart
    (heat,) = data["summary_sections"]["dxt_heatmap"]
    assert heat["module"] == "DXT_POSIX" and heat["bins"] == 200
    assert heat["time_source"] == "run_time" and heat["max_time_s"] == 1469.0
    import darshan
    from darshan.experimental.plots import heatmap_handling as hh

    with darshan.DarshanReport(str(lake["traces"] / "dxt.darshan")) as report:
        for op in ("read", "write"):
            agg = hh.get_aggregate_data(report=report, mod="DXT_POSIX", ops=[op])
            want = hh.get_heatmap_df(agg, 200, 1, max_time=report.metadata["job"]["run_time"])
            assert heat[f"{op}_bytes"] == pytest.approx(want.sum(axis=0).tolist(), abs=1e-3)
            assert heat[f"segment_{op}_bytes"] == agg["length"].sum()


def test_report_reads_each_table_once_and_draws_only_for_the_page(lake):
    """A page reads its log's rows of REPORT_TABLES at once (`LakeReader.prefetch`) and of no
    other table, the ledger row `find_job` read included; `--format text` / `json` (`draw=False`)
    have the same findings and no figure."""
    from apps.report import REPORT_TABLES, LakeReader, build, find_job
    from iolake.config import load_config

    conf = load_config("local", overrides={"lake": {"root": lake["lake"]}})
    reader = LakeReader(conf)
    log_id = find_job(reader, lake["dxt"][:10])
    assert set(reader._logs) == {("logs", log_id)}
    page = build(reader, log_id)
    assert {name for name, _ in reader._logs} <= {"logs", *REPORT_TABLES}
    assert page.timeline_png.startswith(b"\x89PNG")
    drawn = sorted(k for k in page.sections if k.endswith("_png"))
    assert "io_cost_png" in drawn and "dxt_posix_heatmap_png" in drawn

    facts = build(LakeReader(conf), log_id, draw=False)
    assert facts.timeline_png is None and facts.umami_png is None
    assert not [k for k in facts.sections if k.endswith("_png")]
    assert facts.tags == page.tags and facts.timeline_note == page.timeline_note
    assert {k: v for k, v in page.sections.items() if not k.endswith("_png")} == facts.sections


def test_report_opens_no_table_the_ledger_says_the_log_has_no_rows_in(lake, monkeypatch):
    """The decoded tables a log's ledger row counts no rows of (`LakeReader.none_at_ingest`)
    truly hold none of it (counted here through delta-rs for every log of the lake), the page
    reads none of them, and it is the page that reads every table."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    import apps.report as report
    from iolake.config import load_config
    from schemas import TABLES

    conf = load_config("local", overrides={"lake": {"root": lake["lake"]}})
    root = Path(lake["lake"])
    ledger = DeltaTable(str(root / "bronze" / "logs")).to_pyarrow_table(columns=["log_id"])
    skipped = 0
    for log_id in ledger.column("log_id").to_pylist():
        absent = report.LakeReader(conf).none_at_ingest(log_id)
        skipped += len(absent)
        for name in absent:
            path = root / TABLES[name].layer / name
            if (path / "_delta_log").is_dir():
                rows = DeltaTable(str(path)).to_pyarrow_dataset()
                assert rows.count_rows(filter=ds.field("log_id") == log_id) == 0, (log_id, name)
    assert skipped, "no log of the lake lacks a decoded table: nothing was checked"

    read: list[str] = []
    real = report.arrow.read_logs
    monkeypatch.setattr(
        report.arrow,
        "read_logs",
        lambda lake_, spec, *a, **k: read.append(spec.name) or real(lake_, spec, *a, **k),
    )
    reader = report.LakeReader(conf)
    log_id = report.find_job(reader, lake["dxt"][:10])
    absent = reader.none_at_ingest(log_id)
    assert absent and "posix" not in absent
    page = report.build(reader, log_id, draw=False)
    assert not absent & set(read)
    monkeypatch.setattr(report.LakeReader, "none_at_ingest", lambda self, log_id: frozenset())
    whole = report.LakeReader(conf)
    every = report.build(whole, log_id, draw=False)
    held = {name for name in absent if whole.exists(name)}  # tables the lake has, of other logs
    assert held and held <= set(read)
    assert every == page


def test_resolve_job_prefers_an_exact_log_id():
    from apps.report import JobNotFound, resolve_job

    rows = [{"log_id": "ab", "jobid": 7}, {"log_id": "abc", "jobid": 8}]
    assert resolve_job(rows, "AB") == "ab" and resolve_job(rows, "8") == "abc"
    with pytest.raises(JobNotFound, match="ambiguous: 2 logs"):
        resolve_job(rows[1:] + [{"log_id": "abd", "jobid": 9}], "ab")


def test_report_reads_a_table_with_deletion_vectors_without_spark(spark, lake, tmp_path):
    from deltalake import DeltaTable

    from apps.report import LakeReader, build, render
    from iolake.config import load_config

    copy = tmp_path / "lake"
    shutil.copytree(lake["lake"], copy)
    path = copy / "silver" / "bottleneck_tags"
    spark.sql(
        f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    dropped = (
        spark.read.format("delta")
        .load(str(path))
        .where(F.col("log_id") == lake["dxt"])
        .orderBy("tag")
        .first()
        .tag
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE log_id = '{lake['dxt']}' AND tag = '{dropped}'")
    assert (
        DeltaTable(str(path)).deletion_vectors().read_all().num_rows > 0
    )  # rows masked, files kept
    page = Page(
        render(
            build(
                LakeReader(load_config("local", overrides={"lake": {"root": str(copy)}})),
                lake["dxt"],
            )
        )
    )
    want = {
        t.tag
        for t in spark.read.format("delta")
        .load(str(path))
        .where(F.col("log_id") == lake["dxt"])
        .collect()
    }
    assert set(page.evidence) == want and dropped not in want and want


def test_report_runs_with_no_java_reachable(lake, tmp_path):
    """`iolake report` reads through delta-rs: with no java on PATH and a JAVA_HOME that does not
    exist, it still writes the page, whole, through the console script (which ends the process
    without the interpreter's teardown once the page is written)."""
    env = {
        "PATH": "/nonexistent",
        "JAVA_HOME": str(tmp_path / "no-java"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from iolake.cli import console_main; sys.exit(console_main())",
            "report",
            lake["dxt"][:10],
            "--lake",
            lake["lake"],
            "--out",
            str(tmp_path / "out.html"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    text = (tmp_path / "out.html").read_text()
    assert text.rstrip().endswith("</html>")
    page = Page(text)
    assert lake["dxt"][:12] in page.title and page.all("img") and page.evidence


# ---- headless Chromium ------------------------------------------------------------------------
# The test's own script, added to a copy of the page (the report has none): after load it
# records what the browser made of every image, and how much of the timeline is not white.
PROBE = """<script>
window.addEventListener('load', () => {
  const out = [...document.images].map(img => {
    const r = {id: img.id, complete: img.complete, w: img.naturalWidth, h: img.naturalHeight};
    try {
      const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight;
      const g = c.getContext('2d'); g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data; let ink = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200) ink++;
      r.ink = ink / (c.width * c.height);
    } catch (e) { r.error = String(e); }
    return r;
  });
  document.documentElement.setAttribute('data-probe', JSON.stringify(out));
});
</script>"""


def _chromium() -> str:
    from tests.support.data import need  # a skip here, a failure under CI

    need(
        os.path.exists(CHROMIUM),
        f"needs headless Chromium at {CHROMIUM} (apt-get install chromium; "
        "CI: .ci/run installs the Debian package `chromium`); it is absent here",
    )
    return CHROMIUM


def test_report_renders_in_headless_chromium(lake, dxt_page, tmp_path):
    chromium = _chromium()
    source = dxt_page.read_text()
    head, body_end, tail = source.rpartition("</body>")
    probe = tmp_path / "probed.html"
    probe.write_text(head + PROBE + body_end + tail)
    run = subprocess.run(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    dom = Page(run.stdout)

    # the title the reader sees is the job's, not one a trace string set
    want_title = Page(source).title
    assert (
        dom.title == want_title
        and f"job {lake['jobid']}" in dom.title
        and lake["dxt"][:12] in dom.title
    )
    (root,), (body,) = dom.all("html"), dom.all("body")
    assert "data-pwned" not in body
    # the probe; the timeline and the job-summary figures (apps/summary_sections.py)
    assert len(dom.all("script")) == 1 and [i.get("id") for i in dom.all("img")] == [
        "timeline-img",
        "dxt_posix_heatmap-img",
        "io-cost-img",
        "file-categories-img",
        "access-sizes-img",
        "op-counts-img",
        "roots-img",
    ]
    # the tags, with their evidence, as rendered
    assert set(dom.evidence) == set(Page(source).evidence) and HOSTILE_FILE in dom.body_text
    # the timeline decoded at the PNG's own size, and it is a drawing, not a blank
    png = base64.b64decode(Page(source).all("img")[0]["src"].split(",", 1)[1])
    width, height = struct.unpack(">II", png[16:24])
    img, *figures = json.loads(root["data-probe"])
    assert img["complete"] and (img["w"], img["h"]) == (width, height), img
    assert "error" not in img and 0.02 < img["ink"] < 0.9, img
    # every job-summary figure decoded at its PNG's size, a drawing, not a blank
    for seen, tag in zip(figures, Page(source).all("img")[1:]):
        png = base64.b64decode(tag["src"].split(",", 1)[1])
        assert seen["complete"] and (seen["w"], seen["h"]) == struct.unpack(">II", png[16:24])
        assert "error" not in seen and 0.005 < seen["ink"] < 0.9, seen


# ---- the UMAMI panel: this job against its application's history ----------------------------
# A copy of the report lake with gold/app_runs rows written through the project's writer: the
# dxt job ("today", its own application key from the real silver rows) after 20 earlier runs of
# the same application with these literal metrics (and one run after it), and the noposix job after 3
# earlier runs of its own. The panel follows two metrics: bandwidth (lower is worse) and I/O time (higher is worse).
UMAMI_BW = [
    800.0,
    950.0,
    700.0,
    1020.0,
    880.0,
    910.0,
    760.0,
    990.0,
    1100.0,
    840.0,
    930.0,
    870.0,
    1010.0,
    780.0,
    960.0,
    890.0,
    1050.0,
    820.0,
    940.0,
    900.0,
]
UMAMI_IO = [
    10.0,
    9.0,
    12.0,
    8.0,
    11.0,
    10.0,
    13.0,
    9.0,
    8.5,
    11.0,
    10.0,
    12.0,
    9.0,
    13.0,
    10.0,
    11.0,
    8.0,
    12.0,
    10.0,
    9.0,
]
TODAY_BW, TODAY_IO = (
    410.0,
    7.5,
)  # bandwidth far below every earlier run; I/O time below every earlier run
UMAMI_WATCH = {
    "metrics": [
        {"name": "bandwidth_mib_s", "worse": "lower"},
        {"name": "io_time_s", "worse": "higher"},
    ]
}
RED, BLUE = (
    (0xDA, 0x00, 0x17),
    (0x2C, 0x69, 0xA9),
)  # the worst and the best quarter (pytokio's colours)


def _umami_conf(lake_root: str, **watch):
    from iolake.config import load_config

    return load_config(
        "local", overrides={"lake": {"root": lake_root}, "watch": {**UMAMI_WATCH, **watch}}
    )


@pytest.fixture(scope="module")
def umami_lake(spark, lake, tmp_path_factory) -> dict:
    import datetime as dt

    import numpy as np

    from features import regressions
    from iolake.lake import read_table
    from iolake.lake.writer import write
    from schemas import GOLD, SILVER

    root = tmp_path_factory.mktemp("umami") / "lake"
    shutil.copytree(lake["lake"], root)
    conf = _umami_conf(str(root))
    jf = read_table(spark, SILVER["job_features"], str(root)).where(
        F.col("log_id").isin(lake["dxt"], lake["noposix"])
    )
    ff = read_table(spark, SILVER["file_features"], str(root))
    today = {r["log_id"]: r.asDict() for r in regressions.app_runs(jf, ff, conf.watch).collect()}
    assert set(today) == {lake["dxt"], lake["noposix"]}, "setup: both jobs need a start time"
    day = dt.timedelta(days=1)
    rows = []
    noposix_history = ([500.0, 520.0, 480.0], [3.0, 2.9, 3.1])
    for log_id, bws, ios in (
        (lake["dxt"], UMAMI_BW, UMAMI_IO),
        (lake["noposix"], *noposix_history),
    ):
        job = today[log_id]
        if log_id == lake["dxt"]:
            job.update(bandwidth_mib_s=TODAY_BW, io_time_s=TODAY_IO)
        rows.append(job)
        for i, (bw, io) in enumerate(zip(bws, ios)):
            start = job["start"] - (len(bws) - i) * day
            rows.append(
                {
                    **job,
                    "log_id": f"{log_id[:16]}-earlier-{i:02d}",
                    "job_month": start.strftime("%Y-%m"),
                    "start": start,
                    "bandwidth_mib_s": bw,
                    "io_time_s": io,
                }
            )
    # and a run of dxt's application after it: the panel of a job is its history up to the job
    later = today[lake["dxt"]]["start"] + day
    rows.append(
        {
            **today[lake["dxt"]],
            "log_id": f"{lake['dxt'][:16]}-later",
            "job_month": later.strftime("%Y-%m"),
            "start": later,
            "bandwidth_mib_s": 1500.0,
            "io_time_s": 30.0,
        }
    )
    spec = GOLD["app_runs"]
    write(spark, conf, spec, spark.createDataFrame(rows, spec.struct))

    # one gold/regressions row of the dxt job, as the watch stage writes them (the table's display is
    # tested here, not the detectors: tests/features/test_regressions.py)
    dxt = today[lake["dxt"]]
    base = float(np.median(UMAMI_BW))
    flagged = {
        "app": dxt["app"],
        "start": dxt["start"],
        "log_id": lake["dxt"],
        "metric": "bandwidth_mib_s",
        "value": TODAY_BW,
        "baseline": base,
        "change": TODAY_BW / base - 1,
        "rule": "robust_z",
        "threshold_name": "watch.robust_z.z",
        "threshold": 2.0,
        "score": -7.25,
        "since": dxt["start"],
        "baseline_runs": 20,
        "baseline_first": dxt["start"] - 20 * day,
        "baseline_last": dxt["start"] - day,
        "fs": dxt["fs"] or "/scratch",
        "weather": False,
        "weather_peers": 3,
        "weather_dropped": 1,
    }
    spec = GOLD["regressions"]
    write(spark, conf, spec, spark.createDataFrame([flagged], spec.struct), mode="overwrite")
    return {
        **lake,
        "lake": str(root),
        "app": dxt["app"],
        "noposix_app": today[lake["noposix"]]["app"],
        "regression": flagged,
    }


def _expected_quartile(history: list[float], today: float) -> int:
    import numpy as np

    q1, q2, q3 = np.percentile(np.array(history), [25, 50, 75])
    return 1 + int(today > q1) + int(today > q2) + int(today > q3)


class Cells(Page):
    """Page, plus the text and attributes of the elements of the UMAMI tables: cells[(class, metric)]
    for the cells of each metric's table, regressions for the gold/regressions rows."""

    CLASSES = ("umami-today", "umami-quartile", "umami-sma-short", "umami-sma-long", "regression")

    def __init__(self, source: str):
        self.cells: dict[tuple[str, str], tuple[dict, str]] = {}
        self.regressions: list[tuple[str, dict, str]] = []
        self._metric = None
        self._open: list[tuple[str, str, dict, list]] = []
        super().__init__(source)

    def handle_starttag(self, tag, attrs):
        super().handle_starttag(tag, attrs)
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "table":
            self._metric = a.get("data-metric")
        hit = [c for c in classes if c in self.CLASSES]
        if hit:
            self._open.append((tag, hit[0], a, []))

    def handle_endtag(self, tag):
        super().handle_endtag(tag)
        if self._open and self._open[-1][0] == tag:
            _, cls, a, text = self._open.pop()
            text = " ".join("".join(text).split())
            if cls == "regression":
                self.regressions.append((self._metric, a, text))
            else:
                self.cells[(cls, self._metric)] = (a, text)

    def handle_data(self, data):
        super().handle_data(data)
        for *_, buf in self._open:
            buf.append(data)

    def metric_cells(self, metric: str) -> dict[str, tuple[dict, str]]:
        return {cls: v for (cls, m), v in self.cells.items() if m == metric}


def _chromium_dom(source: str, tmp_path: Path) -> tuple[str, list[dict]]:
    """The DOM headless Chromium made of the page, and what it made of each image (PROBE)."""
    head, body_end, tail = source.rpartition("</body>")
    probe = tmp_path / "probed.html"
    probe.write_text(head + PROBE + body_end + tail)
    run = subprocess.run(
        [
            _chromium(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    (root,) = Page(run.stdout).all("html")
    return run.stdout, json.loads(root["data-probe"])


def _png(src: str):
    import io

    from PIL import Image

    assert src.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).convert("RGB")


def _near(img, colour, tol: int = 40) -> int:
    import numpy as np

    a = np.asarray(img, dtype=int)
    return int((np.abs(a - np.array(colour)).max(axis=2) <= tol).sum())


def test_report_umami_panel_in_headless_chromium(umami_lake, tmp_path):
    import numpy as np

    from apps.report import write_report

    path = write_report(
        _umami_conf(umami_lake["lake"]), umami_lake["dxt"][:10], str(tmp_path / "dxt.html")
    )
    source = path.read_text()
    dom_source, probed = _chromium_dom(source, tmp_path)
    dom = Cells(dom_source)

    # the section, its application (a trace string: escaped in the source, literal to the reader)
    assert ("h2", {"id": "umami"}) in dom.elements
    assert umami_lake["app"] in dom.body_text
    if any(ch in umami_lake["app"] for ch in "<>&\"'"):
        assert umami_lake["app"] not in source
    assert "data-pwned" not in dom.all("body")[0]
    assert "20 earlier runs" in dom.body_text

    # the panel image: decoded by the browser at the PNG's own size, a drawing, not a blank
    (img,) = [a for a in Page(source).all("img") if a.get("id") == "umami-img"]
    png = _png(img["src"])
    (seen,) = [p for p in probed if p["id"] == "umami-img"]
    assert seen["complete"] and (seen["w"], seen["h"]) == png.size, seen
    assert "error" not in seen and 0.02 < seen["ink"] < 0.9, seen
    # two rows: bandwidth on top, today's point red (its worst quarter); I/O time below, today's
    # point blue (quartile 1 of I/O time is its best quarter: lower is better)
    w, h = png.size
    assert 700 <= w <= 1200 and h > 400
    top, bottom = png.crop((0, 0, w, h // 2)), png.crop((0, h // 2, w, h))
    assert _near(top, RED) > 100 and _near(top, BLUE) < 20
    assert _near(bottom, BLUE) > 100 and _near(bottom, RED) < 20

    # the tables: today's value and its quartile, as the literal history implies
    bw, io = dom.metric_cells("bandwidth_mib_s"), dom.metric_cells("io_time_s")
    q_bw, q_io = _expected_quartile(UMAMI_BW, TODAY_BW), _expected_quartile(UMAMI_IO, TODAY_IO)
    assert (q_bw, q_io) == (1, 1)
    assert (
        float(bw["umami-today"][0]["data-value"]) == TODAY_BW
        and f"{TODAY_BW:,.1f} MiB/s" == bw["umami-today"][1]
    )
    assert (
        bw["umami-quartile"][0]["data-quartile"] == str(q_bw)
        and bw["umami-quartile"][0]["data-rank"] == "1"
    )
    assert bw["umami-quartile"][1] == (
        f"Q{q_bw} at or below their first quartile (20 earlier runs): "
        "the worst quarter, higher being better"
    )
    assert (
        io["umami-quartile"][0]["data-quartile"] == str(q_io)
        and io["umami-quartile"][0]["data-rank"] == "4"
    )
    assert io["umami-quartile"][1] == (
        f"Q{q_io} at or below their first quartile (20 earlier runs): "
        "the best quarter, lower being better"
    )
    assert float(io["umami-today"][0]["data-value"]) == TODAY_IO
    # the moving averages at today: the last 5 and the last 30 (here: all 21) runs, today included
    bw_all = [*UMAMI_BW, TODAY_BW]
    assert float(bw["umami-sma-short"][0]["data-value"]) == pytest.approx(np.mean(bw_all[-5:]))
    assert float(bw["umami-sma-long"][0]["data-value"]) == pytest.approx(np.mean(bw_all))

    # the job's gold/regressions row, under the bandwidth table
    ((metric, attrs, text),) = dom.regressions
    assert metric == "bandwidth_mib_s"
    assert attrs["data-rule"] == "robust_z" and attrs["data-weather"] == "no"
    change = umami_lake["regression"]["change"]
    assert (
        f"{100 * change:+.1f} %" in text
        and "watch.robust_z.z" in text
        and "1 of 3 other applications" in text
    )
    assert "No regression of this job's I/O time" in dom.body_text


def test_report_umami_draws_the_newest_runs_and_places_the_job_among_all(umami_lake, monkeypatch):
    import datetime as dt

    import apps.report as R

    # a history longer than the plot's window: the plot draws the newest runs, says so, and the
    # quartile still counts every earlier run (20 here, each a day apart, the job the 21st)
    monkeypatch.setattr(R, "UMAMI_DRAWN", 8)
    conf = _umami_conf(umami_lake["lake"])
    report = R.build(R.LakeReader(conf), umami_lake["dxt"])
    assert report.umami_png  # the note is the plot's: a page without the plot has none
    first_drawn = umami_lake["regression"]["start"] - 7 * dt.timedelta(days=1)
    page = Page(R.render(report))
    assert ("p", {"class": "note", "id": "umami-drawn"}) in page.elements
    for label in ("I/O bandwidth (slowest process)", "I/O time (slowest process)"):
        assert (
            f"{label}: the newest 8 of its 21 runs, from {first_drawn:%Y-%m-%d %H:%M} UTC"
            in page.body_text
        )
    assert "The box plot and the quartiles count every earlier run." in page.body_text
    assert "(20 earlier runs)" in page.body_text
    # a history the window holds whole says nothing of it
    monkeypatch.setattr(R, "UMAMI_DRAWN", 21)
    page = Page(R.render(R.build(R.LakeReader(conf), umami_lake["dxt"])))
    assert ("p", {"class": "note", "id": "umami-drawn"}) not in page.elements
    assert "the newest" not in page.body_text


def test_report_reads_the_applications_history_beside_the_logs_rows(umami_lake, monkeypatch):
    """`prefetch` reads the job's application's runs of gold/app_runs with the log's own rows (in
    its threads); the UMAMI panel then reads no table, and it is the history the panel places the
    job in (its 20 earlier runs: the run after the job is read, not counted)."""
    from deltalake import DeltaTable

    import apps.report as R

    conf = _umami_conf(umami_lake["lake"])
    reader = R.LakeReader(conf)
    log_id = R.find_job(reader, umami_lake["dxt"])
    reader.prefetch(log_id)
    runs = DeltaTable(str(Path(umami_lake["lake"]) / "gold" / "app_runs")).to_pandas()
    want = set(runs.loc[runs["app"] == umami_lake["app"], "log_id"])
    assert len(want) >= 22 and set(reader._history[log_id].column("log_id").to_pylist()) == want
    read: list[str] = []
    for name in ("read", "read_logs"):
        real = getattr(R.arrow, name)
        monkeypatch.setattr(
            R.arrow,
            name,
            lambda lake_, spec, *a, _r=real, **k: (
                read.append(spec.name) or _r(lake_, spec, *a, **k)
            ),
        )
    panel, note = R.umami(reader, log_id)
    assert note == "" and read == [] and panel["n_earlier"] == 20


def test_report_umami_note_without_enough_history(umami_lake, lake, tmp_path):
    from apps.report import LakeReader, build, render

    # noposix: 3 earlier runs of its application, fewer than watch.min_history (10 by default)
    out = tmp_path / "noposix.html"
    assert (
        main(
            ["report", umami_lake["noposix"][:10], "--lake", umami_lake["lake"], "--out", str(out)]
        )
        == 0
    )
    page = Page(out.read_text())
    assert ("p", {"class": "note", "id": "no-umami"}) in page.elements
    assert (
        f"No UMAMI panel: 3 earlier runs of application {umami_lake['noposix_app']} in gold/app_runs, "
        f"fewer than the 10 (watch.min_history)"
    ) in page.body_text
    assert not [a for a in page.all("img") if a.get("id") == "umami-img"]
    # the threshold is the setting: with watch.min_history 3 the same job gets its panel
    report = build(
        LakeReader(_umami_conf(umami_lake["lake"], min_history=3)), umami_lake["noposix"]
    )
    assert report.umami is not None and report.umami_png and report.umami["n_earlier"] == 3
    assert 'id="umami-img"' in render(report)
    # the lake without gold/app_runs (the watch stage never ran): says so
    assert (
        main(
            [
                "report",
                lake["dxt"][:10],
                "--lake",
                lake["lake"],
                "--out",
                str(tmp_path / "plain.html"),
            ]
        )
        == 0
    )
    plain = Page((tmp_path / "plain.html").read_text())
    assert "No UMAMI panel: the lake has no gold/app_runs table" in plain.body_text


def test_report_of_a_log_without_dxt_draws_its_heatmap(spark, tmp_path):
    """A production-style log (HEATMAP, no DXT): the report's timeline is the HEATMAP, its source
    named, and the picture is a drawing of the right size."""
    from iolake.config import load_config
    from jobs import ingest
    from tests.support.data import shared_path

    src = shared_path(
        "darshan",
        "darshan-logs",
        "darshan_logs",
        "dlio_logs",
        "snyder_python3_id3116902-2110483_12-19-66980-15861026832475351160_1.darshan",
    )
    drop = tmp_path / "drop"
    drop.mkdir()
    shutil.copy(src, drop / src.name)
    lake = tmp_path / "lake"
    conf = load_config(
        "local", overrides={"lake": {"root": str(lake)}, "gates": {"enabled": False}}
    )
    ingest.run(spark, conf, [str(drop)], echo=lambda *_: None)
    from readers.fsio import content_hash

    out = tmp_path / "out.html"
    assert (
        main(
            [
                "report",
                content_hash(str(src), "darshan")[:12],
                "--lake",
                str(lake),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    page = Page(out.read_text())
    assert "Source: Darshan's HEATMAP module" in page.body_text
    (img,) = [a for a in page.all("img") if a.get("id") == "timeline-img"]
    png = base64.b64decode(img["src"].split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] > 500


def test_report_job_summary_sections(lake, dxt_page, tmp_path, capsys):
    """The sections after pydarshan's job summary (apps/summary_sections.py; their numbers are
    checked against pydarshan in test_job_summary_pydarshan.py): a figure and a table each for
    the dxt job; for noposix (512 ranks, STDIO only) no access-size figure, and a note instead."""
    page = Page(dxt_page.read_text())
    ids = {a.get("id") for _, a in page.elements}
    for section in ("io-cost", "file-categories", "access-sizes", "op-counts", "data-by-root"):
        assert section in ids, section
    rows = [a for t, a in page.elements if t == "tr" and "io-cost-row" in a.get("class", "")]
    assert [r["data-module"] for r in rows] == ["POSIX", "STDIO"]
    assert [a["data-module"] for t, a in page.elements if t == "table" and
            "common-access" in a.get("class", "")] == ["POSIX"]  # fmt: skip
    assert "dxt-heatmap" in ids and "dxt_posix_heatmap-img" in ids  # one DXT module: POSIX
    assert "dxt_mpiio_heatmap-img" not in ids

    assert (
        main(["report", lake["noposix"][:10], "--lake", lake["lake"], "--out", str(tmp_path)]) == 0
    )
    page = Page((tmp_path / f"{lake['noposix']}.html").read_text())
    imgs = [a.get("id") for a in page.all("img")]
    assert "io-cost-img" in imgs and "access-sizes-img" not in imgs
    assert "No access-size counters for this job" in page.body_text
    assert "No DXT trace in this log: no DXT heat map" in page.body_text
    rows = [a for t, a in page.elements if t == "tr" and "io-cost-row" in a.get("class", "")]
    assert [r["data-module"] for r in rows] == ["STDIO"]

    capsys.readouterr()
    assert main(["report", lake["noposix"][:10], "--lake", lake["lake"], "--format", "json"]) == 0
    sections = json.loads(capsys.readouterr().out)["summary_sections"]
    assert [c["module"] for c in sections["io_cost"]] == ["STDIO"]
    assert "dxt_heatmap" not in sections
    assert {c["module"] for c in sections["op_counts"]} == {"STDIO"}
