"""`iolake report`: the page of a job of a lake built from real logs with a hostile trace in it
(tests/lakes.py) — every trace string escaped, the content a reader sees, job resolution,
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
from tests.lakes import HOSTILE_EXE, HOSTILE_FILE, HOSTILE_META, report_lake

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


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
        return [a for t, a in self.elements if t == tag and (cls is None or cls in (a.get("class") or "").split())]

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
    return spark.read.format("delta").load(f"{lake['lake']}/{table}").where(F.col("log_id") == log_id)


def test_report_escapes_every_string_from_the_trace(spark, lake, dxt_page):
    source = dxt_page.read_text()
    tags = _silver(spark, lake, "silver/bottleneck_tags", lake["dxt"]).collect()
    in_evidence = sum(HOSTILE_FILE in (t.evidence or []) for t in tags)
    assert in_evidence >= 1, "setup: the hostile file should be evidence of a tag"
    in_cover = _silver(spark, lake, "silver/covering_sets", lake["dxt"]) \
        .where(F.col("record_id") == lake["hostile_record"]).count()
    in_plan = _silver(spark, lake, "gold/placement_predictions", lake["dxt"]) \
        .where((F.col("file_name") == HOSTILE_FILE) & (F.col("model_version") == "2")).count()
    assert in_plan == 1

    for raw in (HOSTILE_FILE, HOSTILE_EXE, HOSTILE_META):
        assert raw not in source
    assert source.count(str(escape(HOSTILE_FILE))) == in_evidence + in_cover + in_plan
    page = Page(source)
    assert page.body_text.count(HOSTILE_FILE) == in_evidence + in_cover + in_plan
    # a reader sees each hostile string as text, literally
    for raw in (HOSTILE_FILE, HOSTILE_EXE, HOSTILE_META, "<b>note</b>"):
        assert raw in page.text
    # and the markup is the template's alone: no script, one image (ours), no handler, nothing external
    assert page.all("script") == [] and page.all("iframe") == [] and page.all("link") == []
    (img,) = page.all("img")
    assert img["src"].startswith("data:image/png;base64,")
    assert not [(t, k) for t, a in page.elements for k in a if k.startswith("on")]
    urls = [a[k] for _, a in page.elements for k in ("src", "href", "action") if k in a]
    assert all(u.startswith(("data:", "#")) for u in urls)


def test_report_shows_summary_tags_with_evidence_covering_set_and_newest_predictions(spark, lake, dxt_page):
    page = Page(dxt_page.read_text())
    text = page.body_text
    assert f"job {lake['jobid']}" in page.title and lake["dxt"][:12] in page.title
    feat = _silver(spark, lake, "silver/job_features", lake["dxt"]).first()
    assert f"{feat.bytes_read:,} bytes" in text and f"{feat.bytes_written:,} bytes" in text

    tags = {t.tag: t for t in _silver(spark, lake, "silver/bottleneck_tags", lake["dxt"]).collect()}
    assert len(tags) >= 3
    assert page.evidence == {name: list(t.evidence) for name, t in tags.items()}
    for t in tags.values():
        assert t.message in text

    cover = _silver(spark, lake, "silver/covering_sets", lake["dxt"]).count()
    assert len(page.all("tr", "member")) == cover > 0

    v2 = _silver(spark, lake, "gold/placement_predictions", lake["dxt"]).where(F.col("model_version") == "2")
    assert len(page.all("tr", "file")) == v2.count() > 0
    assert len(page.all("tr", "move")) == v2.where(F.col("predicted_tier") != F.col("tier")).count()
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
    reason = spark.read.format("delta").load(f"{lake['lake']}/bronze/logs") \
        .where(F.col("log_id") == lake["truncated"]).first().reason
    assert main(["report", lake["truncated"][:12], "--lake", lake["lake"]]) == 2
    err = capsys.readouterr().err
    assert "quarantined" in err and reason in err
    assert main(["report", "not-a-log", "--lake", lake["lake"]]) == 2
    assert "no job matches" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [f"{lake['noposix']}.html"]


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
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    dropped = spark.read.format("delta").load(str(path)).where(F.col("log_id") == lake["dxt"]).orderBy("tag").first().tag
    spark.sql(f"DELETE FROM delta.`{path}` WHERE log_id = '{lake['dxt']}' AND tag = '{dropped}'")
    assert DeltaTable(str(path)).deletion_vectors().read_all().num_rows > 0  # rows masked, files kept
    page = Page(render(build(LakeReader(load_config("local", overrides={"lake": {"root": str(copy)}})), lake["dxt"])))
    want = {t.tag for t in spark.read.format("delta").load(str(path)).where(F.col("log_id") == lake["dxt"]).collect()}
    assert set(page.evidence) == want and dropped not in want and want


def test_report_runs_with_no_java_reachable(lake, tmp_path):
    """`iolake report` reads through delta-rs: with no java on PATH and a JAVA_HOME that does not
    exist, it still writes the page."""
    env = {"PATH": "/nonexistent", "JAVA_HOME": str(tmp_path / "no-java"), "HOME": str(tmp_path),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = subprocess.run([sys.executable, "-c", "import sys; from iolake.cli import main; sys.exit(main(sys.argv[1:]))",
                          "report", lake["dxt"][:10], "--lake", lake["lake"], "--out", str(tmp_path / "out.html")],
                         capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    page = Page((tmp_path / "out.html").read_text())
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
    from tests.conftest import need  # a skip here, a failure under CI

    need(os.path.exists(CHROMIUM), f"needs headless Chromium at {CHROMIUM} (apt-get install chromium; "
                                   "CI: .ci/run installs the Debian package `chromium`); it is absent here")
    return CHROMIUM


def test_report_renders_in_headless_chromium(lake, dxt_page, tmp_path):
    chromium = _chromium()
    source = dxt_page.read_text()
    head, body_end, tail = source.rpartition("</body>")
    probe = tmp_path / "probed.html"
    probe.write_text(head + PROBE + body_end + tail)
    run = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                          "--virtual-time-budget=10000", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    dom = Page(run.stdout)

    # the title the reader sees is the job's, not one a trace string set
    want_title = Page(source).title
    assert dom.title == want_title and f"job {lake['jobid']}" in dom.title and lake["dxt"][:12] in dom.title
    (root,), (body,) = dom.all("html"), dom.all("body")
    assert "data-pwned" not in body
    assert len(dom.all("script")) == 1 and len(dom.all("img")) == 1  # the probe; the timeline
    # the tags, with their evidence, as rendered
    assert set(dom.evidence) == set(Page(source).evidence) and HOSTILE_FILE in dom.body_text
    # the timeline decoded at the PNG's own size, and it is a drawing, not a blank
    png = base64.b64decode(Page(source).all("img")[0]["src"].split(",", 1)[1])
    width, height = struct.unpack(">II", png[16:24])
    (img,) = json.loads(root["data-probe"])
    assert img["complete"] and (img["w"], img["h"]) == (width, height), img
    assert "error" not in img and 0.02 < img["ink"] < 0.9, img
