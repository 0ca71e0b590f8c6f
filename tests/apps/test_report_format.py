"""The report's findings first with capped evidence, the plan and advice grouped by setting, and
the terminal (`--format text`) and machine-readable (`--format json`) summaries, on hand-built
reports: every expected value is worked out from the rows below."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from markupsafe import escape

from apps.report import (
    Report,
    advice_groups,
    placement_plan,
    plan_groups,
    render,
    severity_counts,
    to_json,
    to_text,
)
from schemas.bottleneck_tags import CATALOG

RANKS = [f"rank {r}" for r in range(12)]


def _tag(tag: str, severity: str, evidence: list[str]) -> dict:
    from apps.report import EVIDENCE_SHOWN, capped

    known = CATALOG[tag]
    shown, more = capped(evidence, EVIDENCE_SHOWN)
    return {
        "tag": tag,
        "severity": severity,
        "metric": "m",
        "value": 2.5,
        "threshold_name": "tags.t",
        "threshold": 2.0,
        "message": f"{tag} fired",
        "evidence": evidence,
        "evidence_shown": shown,
        "evidence_more": more,
        "code": known.code,
        "drishti": "/".join(known.drishti),
        "recommendation": known.recommendation,
    }


def _bw(record_id: int, tier: str, by_tier: dict) -> dict:
    best = max(by_tier, key=by_tier.get)
    return {
        "record_id": record_id,
        "file_name": f"/scratch/out.{record_id:05d}",
        "tier": tier,
        "bandwidth_mib_s": 100.0 + record_id,
        "predicted_bandwidth_mib_s": by_tier[tier],
        "bandwidth_by_tier": list(by_tier.items()),
        "speedup": by_tier[best] / by_tier[tier],
        "best_tier": best,
        "model_name": "iolake-bandwidth",
        "model_version": "2",
    }


def _what_if(record_id: int, speedup: float, advised: str = "stripe count 8") -> dict:
    return {
        "kind": "what_if",
        "item": str(record_id),
        "file_name": f"/scratch/out.{record_id:05d}",
        "current": "stripe count 1",
        "advised": advised,
        "predicted_speedup": speedup,
        "measured_speedup": None,
        "message": "predicted faster with " + advised,
        "evidence": [f"e{i}" for i in range(7)],
        "model_name": "iolake-bandwidth",
        "model_version": "2",
    }


def _report() -> Report:
    tags = [
        _tag("small_writes", "warn", ["/scratch/a"]),
        _tag("stragglers", "high", RANKS),
        _tag("random_reads", "info", []),
    ]
    tags.sort(key=lambda t: {"high": 0, "warn": 1, "info": 2}[t["severity"]])
    # 2,048 files per process on pfs, all best on bb (300 -> 900 MiB/s: 3x), one file on bb
    bw = [_bw(r, "pfs", {"bb": 900.0, "pfs": 300.0}) for r in range(2048)]
    bw.append(_bw(5000, "bb", {"bb": 500.0, "pfs": 250.0}))
    plan, models, tiers = placement_plan([], bw)
    advice = [_what_if(r, s) for r, s in ((1, 2.0), (2, 4.0), (3, 3.0), (4, 5.0))]
    advice.append(_what_if(9, 1.5, advised="stripe count 4"))
    advice.append(
        {
            "kind": "tag",
            "item": "stragglers",
            "file_name": None,
            "current": None,
            "advised": None,
            "predicted_speedup": None,
            "measured_speedup": None,
            "message": "balance the work",
            "evidence": [],
            "model_name": None,
            "model_version": None,
        }
    )
    return Report(
        log_id="L" * 64,
        title="job 7 · ior · log LLLLLLLLLLLL",
        summary=[],
        metadata=[],
        tags=tags,
        covering={
            "members": [],
            "cover_size": 3,
            "n_intervals": 2049,
            "pure_io_time_s": 727.4,
            "proven": True,
        },
        timeline_png=None,
        timeline_note="",
        plan=plan,
        plan_models=models,
        plan_tiers=tiers,
        advice=advice,
        facts={"jobid": 7, "nprocs": 2048, "run_time_s": 780.0, "bytes_written": 2**30},
    )


def test_findings_come_first_by_severity_with_recommendation_and_capped_evidence():
    report = _report()
    html = render(report)
    assert html.index('id="tags"') < html.index('id="summary"') < html.index('id="covering"')
    order = re.findall(r'<tr class="tag" data-tag="([a-z_]+)"', html)
    assert order == ["stragglers", "small_writes", "random_reads"]
    assert severity_counts(report.tags) == [("high", 1), ("warn", 1), ("info", 1)]
    # 12 ranks of evidence: the first 5 as items, then "and 7 more"
    row = html[html.index('data-tag="stragglers"') : html.index('data-tag="small_writes"')]
    assert re.findall(r"<li[^>]*>(rank \d+)</li>", row) == RANKS[:5]
    assert "and 7 more" in row and 'data-evidence="12"' in row
    assert "Recommendation:" in row and str(escape(CATALOG["stragglers"].recommendation)) in row


def test_plan_is_grouped_by_distinct_setting_with_file_counts():
    groups = plan_groups(_report().plan)
    assert [(g["files"], g["tier"], g["best_bw_tier"], g["more"]) for g in groups] == [
        (2048, "pfs", "bb", 2045),
        (1, "bb", "bb", 0),
    ]
    big = groups[0]
    assert big["examples"] == ["/scratch/out.00000", "/scratch/out.00001", "/scratch/out.00002"]
    # measured MiB/s 100 + record_id over records 0..2047: median (100 + 1023 + 100 + 1024) / 2
    assert big["bandwidth_mib_s"] == 1123.5 and big["speedup"] == 3.0
    assert big["by_tier"] == {"bb": 900.0, "pfs": 300.0}
    html = render(_report())
    rows = re.findall(r'<tr class="plan-group[^"]*" data-files="(\d+)"', html)
    assert rows == ["2048", "1"] and "and 2045 more" in html


def test_advice_is_grouped_by_setting_with_file_counts_and_median_speedup():
    groups = advice_groups(_report().advice)
    got = [(g["kind"], g.get("advised"), g["files"], g["predicted_speedup"]) for g in groups]
    # stripe count 8 on files 1-4 (2, 4, 3, 5: median 3.5), stripe count 4 on file 9, the tag
    assert got == [
        ("what_if", "stripe count 8", 4, 3.5),
        ("what_if", "stripe count 4", 1, 1.5),
        ("tag", None, 1, None),
    ]
    assert groups[0]["more"] == 1 and groups[0]["evidence_more"] == 2
    html = render(_report())
    assert re.findall(r'class="advice-row" data-kind="\w+" data-files="(\d+)"', html) == [
        "4",
        "1",
        "1",
    ]
    assert "table.advice, table.plan { table-layout: fixed; }" in html


def test_text_summary_fits_100_columns_without_colour_and_leads_with_the_worst_finding():
    text = to_text(_report())
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100 and "\033[" not in text
    findings = [line for line in lines if line.lstrip().startswith("[")]
    assert [f.split()[0] for f in findings[:3]] == ["[HIGH]", "[WARN]", "[INFO]"]
    assert "FINDINGS (1 high, 1 warn, 1 info)" in text
    assert "evidence: rank 0, rank 1, rank 2, rank 3, rank 4 and 7 more" in text
    assert text.count("recommendation:") == 3
    assert "2048 file(s) on pfs: best tier bb, speed-up 3x" in text
    assert "\033[1;31m[HIGH]" in to_text(_report(), colour=True)
    # a trace's file name cannot drive the terminal: control characters are printed as "?"
    hostile = _report()
    hostile.tags[0]["evidence_shown"] = ["/scratch/\x1b]2;pwned\x07\x1b[2Jx"]
    out = to_text(hostile, colour=True)
    assert "evidence: /scratch/?]2;pwned??[2Jx" in out and "\x07" not in out


def test_json_summary_holds_the_same_facts_machine_readable():
    data = json.loads(json.dumps(to_json(_report())))
    assert set(data) == {
        "log_id",
        "title",
        "job",
        "findings",
        "covering_set",
        "timeline",
        "efficiency",
        "advice",
        "advice_models",
        "site",
        "suspect",
        "summary_sections",
        "plan",
        "notes",
    }
    assert data["efficiency"] is None  # no per-job model scored this literal job
    facts = {"efficiency": 0.31, "measured_mib_s": 31.0, "expected_mib_s": 100.0, "line": "…"}
    with_eff = json.loads(json.dumps(to_json(replace(_report(), efficiency_facts=facts))))
    assert with_eff["efficiency"] == facts
    assert [f["severity"] for f in data["findings"]] == ["high", "warn", "info"]
    assert data["findings"][0]["evidence"] == RANKS  # all of it, not capped
    assert data["findings"][0]["recommendation"] == CATALOG["stragglers"].recommendation
    assert data["job"]["nprocs"] == 2048 and data["covering_set"]["cover_size"] == 3
    assert [g["files"] for g in data["plan"]["groups"]] == [2048, 1]
    assert len(data["plan"]["groups"][0]["file_names"]) == 2048
    assert [g["files"] for g in data["advice"]] == [4, 1, 1]


def test_covering_set_says_whether_pure_io_time_is_exact_or_bounded_and_from_what():
    from apps.report import time_bound

    heat = {
        "time_source": "heatmap",
        "exact": False,
        "pure_io_time_s": 727.4,
        "pure_io_time_min_s": 41.25,
        "interval_source": "counters",
    }
    note = time_bound(heat)
    assert note == (
        "an upper bound: at most 727.4 s, from the READ/WRITE START/END counters cut to the log's "
        "non-empty HEATMAP bins; at least 41.2 s, the slowest process's read and write time "
        "(per rank the longer of MPI-IO and POSIX, plus STDIO)"
    )
    counters = time_bound({**heat, "time_source": "counters", "pure_io_time_s": 41731.0})
    assert counters.startswith("an upper bound: at most 41,731.0 s (11.59 h), from the READ/WRITE")
    assert "(no DXT, no HEATMAP)" in counters
    assert time_bound({"time_source": "dxt", "exact": True, "pure_io_time_s": 3.0}) == (
        "exact: the union of the traced DXT ops"
    )
    # rows from before the bound columns: DXT stays exact, counters are an upper bound
    assert time_bound({"interval_source": "recorder"}).startswith(
        "exact: the union of the traced Recorder"
    )
    old = time_bound({"interval_source": "counters", "pure_io_time_s": 5.0})
    assert "a row from before bounds were recorded" in old and "at least" not in old
    # the page, the terminal and the JSON all say it
    report = _report()
    report.covering.update(heat, time_note=note)
    assert f'<p class="bound">Pure I/O time is {escape(note)}.</p>' in render(report)
    text = to_text(report)
    assert "pure I/O time: an upper bound: at most 727.4 s, from the READ/WRITE START/END" in text
    assert max(len(line) for line in text.splitlines()) <= 100
    data = json.loads(json.dumps(to_json(report)))["covering_set"]
    assert (data["time_source"], data["exact"], data["pure_io_time_min_s"]) == (
        "heatmap",
        False,
        41.25,
    )
    assert data["time_note"] == note
