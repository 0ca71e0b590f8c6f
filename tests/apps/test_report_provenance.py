"""The report says which model each prediction comes from and what it learnt from (plainly when
that is another machine's benchmark), names the site profile its commands come from, and its advice
table fits the page however long the file names and commands (headless Chromium)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from markupsafe import escape

from apps.report import model_provenance, render, to_json, to_text
from models.benchmarks import SHIPPED
from tests.apps.test_report_format import _report

SHIPPED_SOURCE = f"benchmark iosweep (shipped: {SHIPPED['iosweep']})"
LONG = (
    "/gpfs/alpine/proj-shared/chm135/nwchem_runs/2026-11-27/water_cluster_w64_ccsd_t/scratch/"
    "nwchem.aoints.000123_with_a_suffix_that_has_no_break_at_all_"
)
STAGE = "#DW stage_in source=" + LONG + " destination=$DW_JOB_STRIPED/nwchem.aoints type=file"


def _with_provenance(origin: str = "shipped_benchmark", trained_on: str = SHIPPED_SOURCE):
    """The hand-built report, its what-ifs and bandwidth plan from a model trained on `trained_on`."""
    r = _report()
    for a in r.advice:
        if a["kind"] == "what_if":
            a.update(model_alias="champion", trained_on=trained_on, training_origin=origin)
    r.plan_provenance = model_provenance(
        [
            {
                "model_name": name,
                "model_version": version,
                "model_alias": "champion",
                "trained_on": trained_on,
                "training_origin": origin,
            }
            for name, version in (("iolake-placement", "1"), ("iolake-bandwidth", "2"))
        ]
    )
    r.site = "generic"
    return r


def test_report_states_the_model_and_what_it_was_trained_on():
    html = render(_with_provenance())
    # the advice and the plan each name the model, its alias, and plainly what it learnt from
    sentence = (
        "trained on the shipped IOR sweep of a 2-core VM (tmpfs vs ext4), not on this site's file "
        "systems: treat the factor as the direction, not the size"
    )
    advice = html[html.index('id="advice"') : html.index('id="placement"')]
    plan = html[html.index('id="placement"') :]
    both = "iolake-bandwidth v2 (@champion) and iolake-placement v1 (@champion)"
    for part, lead in (
        (advice, "Predicted speed-ups come from <b>iolake-bandwidth v2 (@champion)</b>"),
        (plan, f"Predictions of <b>{both}</b>"),  # two models saying the same: said once
    ):
        (p,) = re.findall(r'<p class="provenance foreign"[^>]*>(.*?)</p>', part, re.S)
        assert p.startswith(f"{lead}, {escape(sentence)}.")
        assert 'data-origin="shipped_benchmark"' in part
    assert 'id="site-profile"' in advice and "<code>generic</code>" in advice
    text = to_text(_with_provenance())
    assert "model iolake-bandwidth v2 (@champion): trained on the shipped IOR sweep" in text
    assert max(len(line) for line in text.splitlines()) <= 100
    data = json.loads(json.dumps(to_json(_with_provenance())))
    (m,) = data["advice_models"]
    assert (m["model_name"], m["model_version"], m["model_alias"]) == (
        "iolake-bandwidth",
        "2",
        "champion",
    )
    assert (m["training_origin"], m["foreign"], m["note"]) == ("shipped_benchmark", True, sentence)
    assert data["plan"]["provenance"][0] == m and data["site"] == "generic"
    assert {g.get("training_origin") for g in data["advice"]} == {"shipped_benchmark", None}


def test_report_of_a_model_trained_on_the_lake_gives_no_warning():
    html = render(_with_provenance("lake", "silver/file_features"))
    assert 'class="provenance foreign"' not in html
    assert (
        "Predicted speed-ups come from <b>iolake-bandwidth v2 (@champion)</b>, "
        + str(escape("trained on this lake's own jobs (silver/file_features)."))
        in html
    )


def test_report_rows_without_provenance_say_it_was_not_recorded():
    """Rows scored before provenance was recorded (an older lake): no origin is made up."""
    (p,) = model_provenance([{"model_name": "iolake-bandwidth", "model_version": "1"}])
    assert p["training_origin"] == "unknown" and not p["foreign"]
    assert p["note"].startswith("its training source was not recorded with these rows")
    assert model_provenance([{"model_name": None, "model_version": None}]) == []


PROBE = """<script>
window.addEventListener("load", () => {
  const view = document.documentElement.clientWidth;
  const out = {view, page: document.documentElement.scrollWidth, tables: {}};
  for (const t of document.querySelectorAll("table")) {
    const cls = t.className || "kv";
    const r = t.getBoundingClientRect();
    let cells = 0;
    for (const c of t.querySelectorAll("td, th")) {
      if (c.scrollWidth > c.clientWidth + 1) cells += 1;  // content past its cell's edge
    }
    const prev = out.tables[cls] || {right: 0, cells: 0};
    out.tables[cls] = {right: Math.max(prev.right, r.right), cells: prev.cells + cells};
  }
  document.documentElement.dataset.probe = JSON.stringify(out);
});
</script>"""


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 900])
def test_advice_table_fits_the_page_in_headless_chromium(tmp_path, width):
    from tests.support.data import need

    chromium = shutil.which("chromium")
    need(chromium is not None, "needs headless Chromium (apt-get install chromium)")
    r = _with_provenance()
    for a in r.advice:  # long paths without a break, and a long staging command in the advice
        if a["kind"] == "what_if":
            a["file_name"] = LONG + a["item"]
            a["message"] = f"predicted 5.14x faster: move the file to the burst buffer: {STAGE}"
            a["evidence"] = [f"tier alone: bb -> 5.14x ({LONG})"]
    for p in r.plan:
        p["file_name"] = LONG + str(p["file_name"])
    page = tmp_path / "report.html"
    page.write_text(render(r).replace("</body>", PROBE + "</body>"))
    run = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--window-size={width},2400",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    probe = json.loads(
        re.search(r'data-probe="([^"]*)"', run.stdout).group(1).replace("&quot;", '"')
    )
    assert probe["page"] <= probe["view"], probe  # nothing runs off the right edge of the page
    for cls in ("advice", "plan"):
        assert probe["tables"][cls]["right"] <= probe["view"], probe
        assert probe["tables"][cls]["cells"] == 0, probe  # and nothing spills out of its cell
