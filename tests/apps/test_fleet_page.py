"""`iolake fleet` (apps/fleet.py) on fleet marts written by hand (tests/support/fleet_marts.py `small`).

Every expected figure below is worked out by hand from the rows of `small`, written next to it:
the page's code computes none of them. The marts themselves are the other helper's stage; here
they are Delta tables in the spec's column types at LAKE/gold/<mart>, as the stage lays them out.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from apps.fleet import month_range, slug
from iolake.cli import main
from tests.support.fleet_marts import HOSTILE, jobs_table, small


class Tables(HTMLParser):
    """Every table with an id: its rows as (section, row class, [cell texts]); and the KPIs."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[tuple[str, str, list[str]]]] = {}
        self.attrs_seen: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self._table = self._section = self._row = self._cell = None
        self._cls = ""
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k, v in attrs:
            self.attrs_seen.append((tag, k, v or ""))
        if tag == "table" and a.get("id"):
            self._table = self.tables.setdefault(a["id"], [])
        elif self._table is None:
            return
        elif tag in ("thead", "tbody", "tfoot"):
            self._section = tag
        elif tag == "tr":
            self._row, self._cls = [], a.get("class") or ""
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if self._table is None:
            return
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._table.append((self._section, self._cls, self._row))
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def body(self, table: str) -> list[list[str]]:
        return [cells for section, _, cells in self.tables[table] if section == "tbody"]

    def foot(self, table: str, cls: str) -> list[str]:
        (row,) = [
            cells
            for section, c, cells in self.tables[table]
            if section == "tfoot" and cls in c.split()
        ]
        return row


def render(lake: Path, out: Path, *flags: str) -> tuple[str, Tables]:
    rc = main(["fleet", "--lake", str(lake), "--out", str(out), *flags])
    assert rc == 0
    html = (out / "index.html").read_text(encoding="utf-8")
    return html, Tables(html)


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    lake = small(tmp_path_factory.mktemp("fleet") / "lake")
    jobs_table(lake, ["a3", "h1"])  # two of the three flagged runs have a job to report
    return lake


@pytest.fixture(scope="module")
def page(lake, tmp_path_factory):
    out = tmp_path_factory.mktemp("fleet_out")
    html, t = render(lake, out, "--top", "2")
    return out, html, t


# Columns of the ranking tables: #, name, program|applications, months, runs, suspect, core-hours,
# I/O core-hours, I/O share, read, written, regressions.
def test_fleet_page_top_applications_are_hand_worked(page):
    _, _, t = page
    rows = t.body("app-table")
    # alpha: 4+2 runs, 1 suspect, 100+50 core-h, 10+20 I/O core-h, 30/150 = 20.0%, read 1+1 GiB,
    # written 2 GiB, 1 regression, 2 months; gamma: 5 runs, 40 core-h, 8 I/O core-h, 20.0%.
    assert rows == [
        [
            "1",
            "alpha",
            "alpha.x",
            "2",
            "6",
            "1",
            "150",
            "30.0",
            "20.0%",
            "2.00 GiB",
            "2.00 GiB",
            "1",
        ],
        ["2", "gamma", "gamma", "1", "5", "0", "40.0", "8.0", "20.0%", "0 B", "0 B", "0"],
    ]
    # the rest: HOSTILE (1+3 runs, 10+30 core-h, 5+1 I/O) and delta (1 run, 4 core-h, 0.5 I/O):
    # 5 runs, 44 core-h, 6.5 I/O core-h, 6.5/44 = 14.8%, 2 regressions
    rest = t.foot("app-table", "rest")
    assert rest[1:] == ["and 2 more", "5", "0", "44.0", "6.5", "14.8%", "0 B", "0 B", "2"]
    # all: 16 runs, 1 suspect, 234 core-h, 44.5 I/O core-h, 44.5/234 = 19.0%, 3 regressions
    total = t.foot("app-table", "total")
    assert total[1:] == [
        "all 4 applications",
        "16",
        "1",
        "234",
        "44.5",
        "19.0%",
        "2.00 GiB",
        "2.00 GiB",
        "3",
    ]


def test_fleet_page_top_users_are_hand_worked(page):
    _, _, t = page
    rows = t.body("uid-table")
    # uid 100: alpha and delta, months 01-03, 6+1 runs, 150+4 core-h, 30+0.5 I/O core-h;
    # gamma's key has no user: 8.0; uid 200 (HOSTILE, 6.0) is the rest.
    assert [r[1:8] for r in rows] == [
        ["uid 100", "2", "3", "7", "1", "154", "30.5"],
        ["(no user in the key)", "1", "1", "5", "0", "40.0", "8.0"],
    ]
    assert t.foot("uid-table", "rest")[1:7] == ["and 1 more", "4", "0", "40.0", "6.0", "15.0%"]


def test_fleet_page_tag_ledger_never_sums_overlapping_tags(page):
    _, html, t = page
    rows = t.body("ledger-table")
    # small_writes: 2+1+1 jobs, 6+12+0.5 = 18.5 I/O core-h = 41.6% of 44.5, 60+30+10 core-h,
    # recoverable 3.0 (the one estimated row), 2 apps, alpha holds 18/18.5 = 97.3%.
    # metadata_heavy: 1 job, 12.0 = 27.0% of 44.5, 30 core-h, recoverable 4.0.
    assert rows == [
        [
            "small_writes",
            "IO02",
            "4",
            "18.5",
            "41.6%",
            "100",
            "≈ 3.0",
            "what_if",
            "2",
            "(97.3%) alpha",
        ],
        [
            "metadata_heavy",
            "IO12",
            "1",
            "12.0",
            "27.0%",
            "30.0",
            "≈ 4.0",
            "what_if",
            "1",
            "(100.0%) alpha",
        ],
    ]
    # the distinct-job total is every run once (16 runs, 44.5 I/O core-h), not 18.5 + 12.0
    distinct = t.foot("ledger-table", "distinct")
    assert distinct[1:4] == ["16", "44.5", "100.0%"]
    assert html.count(">30.5<") == 1  # 18.5 + 12.0 appears once: uid 100's cell, not a tag total
    head = [cells for section, _, cells in t.tables["ledger-table"] if section == "thead"][0]
    assert "recoverable (estimate)" in head


def test_fleet_page_file_systems_are_hand_worked(page):
    _, _, t = page
    rows = t.body("fs-table")
    # /scratch: 2 days, 3+2 jobs, 2+1 GiB read, 1 GiB written, 120 reads, 50 writes, 14 opens,
    # 360 s = 0.1 h metadata, 5400 s = 1.5 h I/O, 360/5400 = 6.7%; /home: 7200/7200 = 100.0%;
    # (none): no I/O time, no share. Ranked by bytes moved.
    assert rows == [
        [
            "/scratch",
            "lustre",
            "2",
            "5",
            "3.00 GiB",
            "1.00 GiB",
            "120",
            "50",
            "14",
            "0.1",
            "1.5",
            "6.7%",
        ],
        ["/home", "nfs", "1", "1", "1.00 MiB", "1.00 MiB", "1", "1", "2", "2.0", "2.0", "100.0%"],
    ]  # --top 2: the third mount is "and 1 more"
    assert t.foot("fs-table", "rest") == ["and 1 more mounts (fewer bytes)"]


def test_fleet_page_regressions_health_and_drift_are_hand_worked(page):
    _, _, t = page
    assert t.body("regressions-table") == [
        [HOSTILE, "2", "4", "2", "2026-03 (2)"],
        ["alpha", "1", "6", "2", "2026-01 (1)"],
    ]
    assert t.foot("regressions-table", "total")[:2] == ["all applications", "3"]
    # newest night first; 2026-01-05 lags 3 logs in silver/bottleneck_tags (app_runs' 0 is no lag)
    assert t.body("health-table") == [
        ["2026-02-01", "5", "5", "0", "0", "—", "0", "2", "1", "60 s", "none"],
        [
            "2026-01-05",
            "10",
            "7",
            "2",
            "1",
            "truncated log: 1",
            "1",
            "1",
            "0",
            "120 s",
            "silver/bottleneck_tags: 3",
        ],
    ]
    assert t.foot("health-table", "total")[:5] == ["all nights", "15", "12", "2", "1"]
    assert t.body("drift-table") == [
        ["iolake-bandwidth", "1", "2026-01", "10", "1.50", "0.180", "80.0%"],
        ["iolake-bandwidth", "2", "2026-02", "20", "0.90", "0.050", "100.0%"],
        ["iolake-job-bandwidth", "1", "2026-03", "4", "3.00", "0.480", "25.0%"],
    ]


def test_fleet_page_application_pages_are_linked_and_hand_worked(page):
    out, html, _ = page
    pages = sorted(p.name for p in (out / "apps").glob("*.html"))
    assert pages == sorted(f"{slug(a)}.html" for a in ("alpha", "gamma", "delta", HOSTILE))
    assert f'href="apps/{slug("alpha")}.html"' in html
    alpha = (out / "apps" / f"{slug('alpha')}.html").read_text(encoding="utf-8")
    assert 'id="app-plot"' in alpha
    # delta is in no list of the main page (not in the top 2, no regression, no tag): no plot
    delta = (out / "apps" / f"{slug('delta')}.html").read_text(encoding="utf-8")
    assert 'id="no-plot"' in delta and 'id="app-plot"' not in delta
    a = Tables(alpha)
    months = a.body("months-table")
    assert months[0] == [
        "2026-01",
        "4",
        "1",
        "100",
        "10.0",
        "10.0%",
        "1.00 GiB",
        "2.00 GiB",
        "50.0",
        "100.0",
        "200.0",
        "0.40",
        "1",
        "small_writes: 2",
    ]
    assert months[1][-1] == "metadata_heavy: 1 small_writes: 1"  # by runs, then by name
    assert a.foot("months-table", "total")[:6] == ["all months", "6", "1", "150", "30.0", "20.0%"]
    # alpha's tags: small_writes 6+12 = 18 of its 30 I/O core-h (60.0%), metadata_heavy 12 (40.0%)
    assert [r[:6] for r in a.body("app-ledger")] == [
        ["small_writes", "IO02", "3", "18.0", "60.0%", "≈ 3.0"],
        ["metadata_heavy", "IO12", "1", "12.0", "40.0%", "≈ 4.0"],
    ]


def test_fleet_page_a_figure_that_fails_is_named_and_the_pages_still_written(
    lake, tmp_path, monkeypatch
):
    import apps.fleet

    def broken(rows):
        raise RuntimeError("no font for the months")

    monkeypatch.setattr(apps.fleet, "draw_app", broken)
    html, _ = render(lake, tmp_path, "--top", "2")
    assert 'id="apps-plot"' in html and "could not be drawn" not in html  # the others drawn
    alpha = (tmp_path / "apps" / f"{slug('alpha')}.html").read_text(encoding="utf-8")
    assert (
        '<p class="note figure-note">The months plot could not be drawn: '
        "RuntimeError: no font for the months</p>" in alpha
    )
    assert 'id="app-plot"' not in alpha and 'id="no-plot"' not in alpha
    assert 'id="months-table"' in alpha and 'id="runs-plot"' in alpha


def test_fleet_page_since_until_keep_those_months(lake, tmp_path):
    _, t = render(lake, tmp_path / "feb_on", "--since", "2026-02")
    # Feb-Mar: alpha 20, gamma 8, HOSTILE 1, delta 0.5 -> 29.5 I/O core-h over 2+5+3+1 = 11 runs
    assert t.foot("app-table", "total")[2:6] == ["11", "0", "124", "29.5"]
    # small_writes Feb-Mar: alpha 1 job (12.0) + HOSTILE 1 job (0.5)
    assert t.body("ledger-table")[0][:4] == ["small_writes", "IO02", "2", "12.5"]
    assert [r[0] for r in t.body("fs-table")] == ["/home", "(none)"]
    assert t.body("fs-table")[1] == [
        "(none)",
        "—",
        "1",
        "1",
        "10 B",
        "0 B",
        "1",
        "0",
        "1",
        "0",
        "0",
        "—",
    ]
    assert [r[0] for r in t.body("health-table")] == ["2026-02-01"]
    html, t = render(lake, tmp_path / "feb", "--since", "2026-02", "--until", "2026-02")
    assert [r[1] for r in t.body("app-table")] == ["alpha", "gamma"]
    assert t.foot("app-table", "total")[2:6] == ["7", "0", "90.0", "28.0"]
    assert [r[:3] for r in t.body("drift-table")] == [["iolake-bandwidth", "2", "2026-02"]]
    assert "alert(1)" not in html
    assert sorted(p.name for p in (tmp_path / "feb" / "apps").iterdir()) == sorted(
        f"{slug(a)}.html" for a in ("alpha", "gamma")
    )
    # alpha's runs of February: a4 (metadata_heavy) and a5 (no_issue: no tag fired, none shown)
    alpha = (tmp_path / "feb" / "apps" / f"{slug('alpha')}.html").read_text(encoding="utf-8")
    assert '<span id="run-tags">1 most frequent: metadata_heavy on 1 run</span>' in alpha


def test_fleet_page_of_a_period_without_runs(lake, tmp_path):
    html, t = render(lake, tmp_path / "none", "--since", "2030-01")
    assert "No application runs in this period." in html
    assert "app-table" not in t.tables and not list((tmp_path / "none" / "apps").iterdir())


def test_fleet_page_bad_months_are_usage_errors(lake, tmp_path, capsys):
    assert main(["fleet", "--lake", str(lake), "--out", str(tmp_path), "--since", "2026-13"]) == 2
    assert "YYYY-MM" in capsys.readouterr().err
    assert (
        main(
            [
                "fleet",
                "--lake",
                str(lake),
                "--out",
                str(tmp_path),
                "--since",
                "2026-03",
                "--until",
                "2026-01",
            ]
        )
        == 2
    )


def test_fleet_page_missing_marts_name_the_table_and_the_command(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (
        main(["fleet", "--lake", str(empty), "--out", str(tmp_path / "out")]) == 2
    )  # iolake/exits.py: USAGE
    err = capsys.readouterr().err
    assert "gold/fleet_app_month" in err and "iolake stage fleet" in err
    assert not (tmp_path / "out" / "index.html").exists()
    # a lake with the core mart but no drift or tag cost yet: the page names what is missing
    partial = small(tmp_path / "partial", skip=("fleet_drift", "fleet_tag_cost"))
    html, _ = render(partial, tmp_path / "partial_out")
    for name in ("fleet_drift", "fleet_tag_cost"):
        m = re.search(rf'id="missing-{name}">(.*?)</p>', html, re.S)
        assert m and f"gold/{name}" in m.group(1) and "iolake stage fleet" in m.group(1)
    assert 'id="missing-fleet_fs_day"' not in html
    assert 'id="missing-regressions"' not in html
    # a lake whose watch has not run: no gold/regressions, no gold/app_runs
    unwatched = small(tmp_path / "unwatched", skip=("watch",))
    html, t = render(unwatched, tmp_path / "unwatched_out")
    m = re.search(r'id="missing-regressions">(.*?)</p>', html, re.S)
    assert m and "gold/regressions" in m.group(1) and "iolake stage watch" in m.group(1)
    assert "regression-rows" not in t.tables
    alpha = (tmp_path / "unwatched_out" / "apps" / f"{slug('alpha')}.html").read_text("utf-8")
    assert 'id="runs-plot"' not in alpha and "slowest-table" not in Tables(alpha).tables


def test_fleet_page_escapes_application_names(page):
    out, html, t = page
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<script") == 1  # the page's own table-sorting script, nothing else
    assert t.body("regressions-table")[0][0] == HOSTILE  # and the reader sees the name as it is
    app = (out / "apps" / f"{slug(HOSTILE)}.html").read_text(encoding="utf-8")
    assert HOSTILE not in app and app.count("<script") == 1
    assert "/" not in slug(HOSTILE) and slug(HOSTILE) != slug("<script>alert(2)</script>")


def test_fleet_page_loads_nothing_from_the_network(page):
    out, html, t = page
    pages = [html] + [p.read_text(encoding="utf-8") for p in (out / "apps").glob("*.html")]
    for text in pages:
        assert "http://" not in text and "https://" not in text
        for tag, attr, value in Tables(text).attrs_seen:
            if attr in ("src", "href"):
                assert value.startswith(
                    ("data:image/png;base64,", "#", "apps/", "../index.html", "file:", "jobs/")
                ), (
                    tag,
                    value[:80],
                )
                if value.startswith("file:"):  # the only links out: the project's docs
                    assert value.split("#")[0].endswith(("/docs/fleet.md", "/docs/watch.md"))
                if tag == "img":
                    assert value.startswith("data:image/png;base64,")


def test_fleet_page_run_tags_are_the_distinct_pairs_of_each_applications_runs():
    """`load_run_tags` on hand-made rows: a run listed twice and a tag row written twice count
    once, no_issue is no tag, a log of no plotted application is left out."""
    import pandas as pd
    import pyarrow as pa

    from apps.fleet import load_run_tags

    tags = pa.table(
        {
            "log_id": ["a1", "a1", "a1", "a2", "b1", "b1", "x9", "a2"],
            "tag": ["slow", "slow", "meta", "no_issue", "slow", "rank0", "slow", "meta"],
        }
    )

    class Reader:
        def exists(self, name):
            return name == "bottleneck_tags"

        def read(self, name, columns, filter=None):
            return tags.select(columns).filter(filter)

    runs = {
        "alpha": pd.DataFrame({"log_id": ["a1", "a2", "a1"]}),
        "beta": pd.DataFrame({"log_id": ["b1"]}),
        "gamma": pd.DataFrame({"log_id": ["g1"]}),
        "empty": pd.DataFrame({"log_id": pd.Series([], dtype=object)}),
    }
    got = {
        app: sorted(map(tuple, df[["log_id", "tag"]].to_numpy().tolist()))
        for app, df in load_run_tags(Reader(), runs).items()
    }
    assert got == {
        "alpha": [("a1", "meta"), ("a1", "slow"), ("a2", "meta")],
        "beta": [("b1", "rank0"), ("b1", "slow")],
    }


def test_fleet_page_trends_have_every_month_between():
    # a trend's x axis runs through the months without runs (over a year's end)
    assert month_range(["2025-11", "2026-02"]) == ["2025-11", "2025-12", "2026-01", "2026-02"]
    assert month_range(["2026-03"]) == ["2026-03"] and month_range([]) == []


# Columns of the flagged-runs tables: (application,) metric, run start, since, value, baseline,
# change, rule, baseline runs, application or file system?, job.
def test_fleet_page_regression_rows_equal_gold_regressions(page, lake):
    _, _, t = page
    rows = t.body("regression-rows")
    # tests/support/fleet_marts.py SMALL_REGRESSIONS, newest first; h2 has no bronze/jobs row and
    # no page is rendered without --reports: every job shows the command
    assert rows == [
        [HOSTILE, "bandwidth_mib_s", "2026-03-06 10:00", "2026-03-05 10:00", "5.0 MiB/s",
         "20.0 MiB/s", "-75.0%", "cusum", "5",
         "unknown no file system known for the run: peers cannot be compared", "iolake report h2"],
        [HOSTILE, "io_time_s", "2026-03-05 10:00", "2026-03-05 10:00", "30.0 s", "10.0 s",
         "+200.0%", "robust_z", "5", "file system 3 of 3 other applications on /home dropped too",
         "iolake report h1"],
        ["alpha", "bandwidth_mib_s", "2026-01-20 10:00", "2026-01-18 00:00", "40.0 MiB/s",
         "100.0 MiB/s", "-60.0%", "sma", "3",
         "application 1 of 4 other applications on /scratch dropped: not enough for the file "
         "system's weather", "iolake report a3"],
    ]  # fmt: skip
    # and the same rows as gold/regressions holds them, read here with delta-rs
    from deltalake import DeltaTable

    gold = DeltaTable(str(lake / "gold" / "regressions")).to_pyarrow_table().to_pylist()
    gold.sort(key=lambda r: r["start"], reverse=True)
    assert len(rows) == len(gold)
    for cells, g in zip(rows, gold):
        assert cells[:2] == [g["app"], g["metric"]]
        assert cells[2] == g["start"].strftime("%Y-%m-%d %H:%M")
        assert float(cells[6].rstrip("%")) == pytest.approx(100 * g["change"], abs=0.05)
        assert float(cells[4].split()[0]) == pytest.approx(g["value"])
        assert float(cells[5].split()[0]) == pytest.approx(g["baseline"])
        assert (cells[7], int(cells[8])) == (g["rule"], g["baseline_runs"])
        assert (
            cells[9].split()[0]
            == {True: "file", False: "application", None: "unknown"}[g["weather"]]
        )
        assert cells[10].endswith(g["log_id"])


def test_fleet_page_regression_rows_keep_the_period(lake, tmp_path):
    _, t = render(lake, tmp_path / "feb_on", "--since", "2026-02")
    assert [r[2] for r in t.body("regression-rows")] == ["2026-03-06 10:00", "2026-03-05 10:00"]
    _, t = render(lake, tmp_path / "jan", "--until", "2026-01")
    assert [r[:2] for r in t.body("regression-rows")] == [["alpha", "bandwidth_mib_s"]]


def test_fleet_page_application_runs_and_regressions(page):
    out, _, _ = page
    a = Tables((out / "apps" / f"{slug('alpha')}.html").read_text(encoding="utf-8"))
    assert [r[:7] for r in a.body("app-regressions")] == [
        ["bandwidth_mib_s", "2026-01-20 10:00", "2026-01-18 00:00", "40.0 MiB/s", "100.0 MiB/s",
         "-60.0%", "sma"],
    ]  # fmt: skip
    # slowest: by bandwidth, a5 (no bandwidth) left out; a3 is the flagged run
    slowest = a.body("slowest-table")
    assert [(r[0], r[2], r[5]) for r in slowest] == [
        ("2026-01-20 10:00", "40.0", "regression"),
        ("2026-02-03 10:00", "80.0", ""),
        ("2026-01-09 10:00", "95.0", ""),
        ("2026-01-15 10:00", "100.0", ""),
        ("2026-01-02 10:00", "110.0", ""),
    ]
    assert [r[-1] for r in slowest][0] == "iolake report a3"
    recent = a.body("recent-table")
    assert [r[0] for r in recent] == [
        "2026-02-10 10:00", "2026-02-03 10:00", "2026-01-20 10:00", "2026-01-15 10:00",
        "2026-01-09 10:00", "2026-01-02 10:00",
    ]  # fmt: skip
    alpha = (out / "apps" / f"{slug('alpha')}.html").read_text(encoding="utf-8")
    assert 'id="runs-plot"' in alpha and "6 runs of this application" in alpha
    # its tags under the plot (SMALL_RUN_TAGS): a4's repeated tag counts once, x9 is no run of
    # it, a5's no_issue is no tag
    assert (
        '<span id="run-tags">3 most frequent: small_writes on 3 runs; metadata_heavy on 2 runs; '
        "rank0_heavy on 1 run</span>" in alpha
    )
    # delta is not on the main page: its runs are not read
    delta = (out / "apps" / f"{slug('delta')}.html").read_text(encoding="utf-8")
    assert 'id="no-runs"' in delta and 'id="runs-plot"' not in delta
    assert not (out / "jobs").exists()  # no --reports: no job page, no link to one
    assert 'href="../jobs/' not in alpha


def test_fleet_page_run_window_is_the_newest_months_holding_enough_runs(lake):
    """`run_window` on `small`'s fleet_app_month: non-suspect runs per month (runs less suspect)
    are alpha 2026-01: 3, 2026-02: 2; HOSTILE 2026-01: 1, 2026-03: 3; gamma 2026-02: 5."""
    from deltalake import DeltaTable

    from apps.fleet import run_window

    am = DeltaTable(str(lake / "gold" / "fleet_app_month")).to_pandas()
    apps = ["alpha", HOSTILE, "gamma"]
    assert run_window(am, apps, 2) == {
        "alpha": ["2026-02"],
        HOSTILE: ["2026-03"],
        "gamma": ["2026-02"],
    }
    # alpha's newest month holds 2 < 3: the one before it too (2 + 3 >= 3)
    assert run_window(am, apps, 3) == {
        "alpha": ["2026-01", "2026-02"],
        HOSTILE: ["2026-03"],
        "gamma": ["2026-02"],
    }
    # never reached: every month; an application not asked for is not read
    assert run_window(am, ["alpha", "delta"], 100) == {
        "alpha": ["2026-01", "2026-02"],
        "delta": ["2026-03"],
    }


def test_fleet_page_reads_an_applications_runs_of_its_window_only(lake, tmp_path, monkeypatch):
    """With RUNS_WINDOW 2, alpha's page reads its runs of 2026-02 only (a4, a5 in gold/app_runs)
    and says so; its tags are those runs' (a4's metadata_heavy)."""
    import apps.fleet

    monkeypatch.setattr(apps.fleet, "RUNS_WINDOW", 2)
    out = tmp_path / "out"
    render(lake, out, "--top", "2")
    alpha = (out / "apps" / f"{slug('alpha')}.html").read_text(encoding="utf-8")
    a = Tables(alpha)
    assert [r[0] for r in a.body("recent-table")] == ["2026-02-10 10:00", "2026-02-03 10:00"]
    assert [r[0] for r in a.body("slowest-table")] == ["2026-02-03 10:00"]  # a5 has no bandwidth
    assert "Its slowest runs of those months" in alpha
    text = " ".join(alpha.split())
    assert (
        "its newest months that hold at least 2 runs, 2026-02: 2 of its 5 non-suspect runs" in text
    )
    assert '<span id="run-tags">1 most frequent: metadata_heavy on 1 run</span>' in alpha
    # HOSTILE's newest month, 2026-03, holds 3 of its runs: h1, h2, h3, not 2026-01's h0
    hostile = Tables((out / "apps" / f"{slug(HOSTILE)}.html").read_text(encoding="utf-8"))
    assert [r[0] for r in hostile.body("recent-table")] == [
        "2026-03-07 10:00", "2026-03-06 10:00", "2026-03-05 10:00"
    ]  # fmt: skip


def _job_links(out: Path) -> list[tuple[Path, str]]:
    links = []
    for p in [out / "index.html", *(out / "apps").glob("*.html")]:
        for tag, attr, value in Tables(p.read_text(encoding="utf-8")).attrs_seen:
            if tag == "a" and attr == "href" and "jobs/" in value:
                links.append((p, value))
    return links


def test_fleet_page_reports_render_the_linked_jobs(lake, tmp_path, capsys):
    out = tmp_path / "with_reports"
    _, t = render(lake, out, "--top", "2", "--reports", "2")
    # linked in order: h2 (newest regression; no bronze/jobs row: skipped, said so), h1, a3
    assert "no report page for h2" in capsys.readouterr().err
    assert sorted(p.name for p in (out / "jobs").iterdir()) == ["a3.html", "h1.html"]
    a3 = (out / "jobs" / "a3.html").read_text(encoding="utf-8")
    assert "log a3" in a3 and "/bin/app-a3" in a3  # apps/report.py's page of that job
    links = _job_links(out)
    assert {v for _, v in links} == {"jobs/a3.html", "jobs/h1.html", "../jobs/a3.html",
                                     "../jobs/h1.html"}  # fmt: skip
    for page_file, href in links:
        assert (page_file.parent / href).resolve().is_file(), (page_file.name, href)
    assert [r[-1] for r in t.body("regression-rows")] == ["iolake report h2", "h1", "a3"]
    # --reports 1: the first linked job that renders
    _, t = render(lake, tmp_path / "one", "--reports", "1")
    assert sorted(p.name for p in (tmp_path / "one" / "jobs").iterdir()) == ["h1.html"]
    assert main(["fleet", "--lake", str(lake), "--out", str(tmp_path), "--reports", "-1"]) == 2


def test_fleet_page_efficiency_lists_the_least_efficient_app_months(page, tmp_path):
    """The small marts' efficiencies: alpha 2026-01 0.40 over 3 runs, alpha 2026-02 0.10 over 2
    (under the 3 runs a row needs: left out, though lowest), gamma 2026-02 0.25 over 5; the others
    none. So: gamma first, then alpha 2026-01; one application-month left out for too few runs."""
    out, html, t = page
    rows = t.body("efficiency-table")
    assert [r[:5] for r in rows] == [
        ["gamma", "2026-02", "0.25", "5", "5"],
        ["alpha", "2026-01", "0.40", "3", "4"],
    ]
    assert rows[0][5] == "12.5"  # gamma's throughput p50; alpha 2026-01's is 100.0
    assert rows[1][5] == "100.0"
    assert "(1 application-months with fewer are left out)" in " ".join(html.split())
    # marts without an efficiency (a lake whose job model learnt from a benchmark): the note
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    lake = small(tmp_path / "lake")
    path = str(lake / "gold" / "fleet_app_month")
    am = DeltaTable(path).to_pyarrow_table()
    i = am.schema.get_field_index("efficiency_p50")
    am = am.set_column(i, "efficiency_p50", pa.nulls(len(am), pa.float64()))
    write_deltalake(path, am, mode="overwrite", partition_by=["month"])
    html2, t2 = render(lake, tmp_path / "out")
    assert 'id="no-efficiency"' in html2 and "efficiency-table" not in t2.tables
    assert "needs a per-job bandwidth model trained on this lake" in " ".join(html2.split())
