"""`iolake report JOB`: one self-contained HTML page per job, built from the lake.

JOB names one decoded log: its `log_id` (the content hash), any prefix of it, or the job's
scheduler `jobid` (exact, digits only). A query that matches several logs (a short prefix, a
jobid traced twice) is refused with the candidates listed; one that matches nothing says so, and
says why when the ledger holds the log as quarantined. `resolve_job` holds that rule.

The page has, findings first: the bottleneck tags by severity (high, warn, info) with metric,
threshold, the catalogue's recommendation and the first EVIDENCE_SHOWN evidence items ("and N
more"); a summary (exe, nprocs, start, run time, bytes read / written, I/O time of the slowest
process, throughput, files, modules, Darshan metadata); the covering set (members, intervals,
shares); a timeline PNG (`timeline`: the DXT or Recorder ops through `IOFrame.timeline`, else the
log's HEATMAP, else the counters' read / write intervals; per-rank rows up to 64 ranks, rank
groups with marginal sums past that; the source named under it) embedded as a base64 `data:`
URI; the UMAMI panel (`umami`, `draw_umami`): when the job's application has at least conf
`watch.min_history` runs before it in gold/app_runs, one PNG row per metric of conf
`watch.metrics` (the history over run start with its short and long moving averages, the job's
value as a point coloured by its quartile among the earlier runs — red the worst quarter, blue
the best, in the direction the metric is better, pytokio's colours — and a box plot of the
earlier runs beside it) and a table per metric, else one line saying why not; the tuning advice
and the placement plan (gold/placement_predictions and gold/bandwidth_predictions of the newest
model version of each model), each grouped by distinct setting with file counts
(`advice_groups`, `plan_groups`: a 2,048-process job's plan is one row, not 2,048), or "no
predictions yet". Nothing is loaded from elsewhere: no script, no font, no stylesheet, no image
outside the page.

`--format text` prints the same findings for a terminal (`to_text`: Drishti-like, 100 columns,
ANSI colour only on a TTY, control characters of trace strings replaced), `--format json` the
same facts for scripts (`to_json`; keys in docs/reports.md).

Every string that comes from a trace (file names, exe, metadata, evidence, messages) is
user-controlled: the page is rendered by the Jinja2 template `apps/templates/report.html.j2`
(package data) with autoescape on and no `|safe`, so each one reaches the page HTML-escaped.

Reads: bronze/logs, jobs, files, io_ops, posix, mpiio, stdio; silver/job_features,
bottleneck_tags, covering_sets; gold/placement_predictions, bandwidth_predictions, app_runs (the
job's application only), regressions (the job's rows), tuning_advice (its newest pass: what-if,
stripe and tag advice) — each only if present, through delta-rs (`iolake.lake.arrow`): no Spark,
no JVM, local folder or URI alike.
Writes the one HTML file (or prints / writes the text or JSON summary).
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import os
import re
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from apps.drawing import Drawings, png_of, preload
from features.units import human_bytes
from iolake.lake import arrow
from schemas import TABLES
from schemas.bottleneck_tags import NO_ISSUE

JOB_COLUMNS = ["log_id", "jobid", "exe", "nprocs", "start_time_sec"]
SEVERITY_ORDER = {"high": 0, "warn": 1, "info": 2}
MAX_CANDIDATES = 10
EVIDENCE_SHOWN = 5  # evidence items a finding shows, then "and N more"
# advice evidence this lake measured (a tier move's measured gain, a precedent): shown first
LAKE_FACTS = ("measured in this lake", "precedent:")
EXAMPLE_FILES = 3  # file names a plan or advice group shows, then "and N more"
FORMATS = ("html", "text", "json")
PREFETCH_THREADS = 4  # tables of one log read at once (`LakeReader.prefetch`)
# the tables a page reads one log's rows of (`build`; tests/apps/test_report.py holds it to that)
REPORT_TABLES = (
    "jobs",
    "files",
    "lustre",
    "io_ops",
    "heatmap",
    "posix",
    "mpiio",
    "stdio",
    "h5f",
    "h5d",
    "pnetcdf_file",
    "pnetcdf_var",
    "dfs",
    "daos",
    "job_features",
    "bottleneck_tags",
    "covering_sets",
    "placement_predictions",
    "bandwidth_predictions",
    "job_bandwidth_predictions",
    "tuning_advice",
    "app_runs",
    "regressions",
)
# the tables a decode writes (bronze, the ledger aside): ingest counts each log's rows of them in
# its ledger row (`row_counts`), and nothing else writes them
DECODED = frozenset(n for n in REPORT_TABLES if TABLES[n].layer == "bronze")


class JobNotFound(LookupError):
    """JOB matched no decoded log of the lake, or more than one."""


# ---- reading the lake -----------------------------------------------------------------------
class LakeReader:
    """Tables of one lake as Arrow, through delta-rs (`iolake.lake.arrow`)."""

    def __init__(self, conf, storage_options: dict | None = None):
        self.lake = arrow.root(conf.lake)
        self.storage_options = storage_options
        self.watch = getattr(
            conf, "watch", None
        )  # conf `watch:` (the UMAMI panel's metrics and windows)
        site = getattr(
            conf, "site", None
        )  # conf `site:`: the profile the advice's commands came from
        self.site = site.name if site is not None else None
        self._exists: dict[str, bool] = {}
        self._tables: dict[str, object] = {}  # name -> its DeltaTable snapshot (None: absent)
        self._months: dict[str, dict[str, str | None]] = {}
        self._logs: dict[tuple[str, str], pa.Table] = {}  # (table, log_id) -> every column
        self._absent: dict[str, frozenset[str]] = {}  # log_id -> `none_at_ingest`
        self._history: dict[str, pa.Table | None] = {}  # log_id -> `app_history`

    def exists(self, name: str) -> bool:
        if name not in self._exists:
            self._exists[name] = arrow.exists(self.lake, TABLES[name], self.storage_options)
        return self._exists[name]

    def table(self, name: str):
        """The table's snapshot (a `DeltaTable`), opened once per reader; None when the lake has
        no such table. A look-up that reads one table several times (`find_job` and the ledger)
        replays its Delta log once."""
        if name not in self._tables:
            self._tables[name] = arrow.open_table(self.lake, TABLES[name], self.storage_options)
            self._exists[name] = self._tables[name] is not None
        return self._tables[name]

    def read(
        self, name: str, columns: list[str] | None = None, log_id: str | None = None, filter=None
    ) -> pa.Table | None:
        """The table's rows (of `log_id` when given, matching `filter`), or None when the lake has
        no such table."""
        if not self.exists(name):
            return None
        if log_id is not None:
            rows = self.log_rows(name, log_id)
            rows = rows if filter is None else rows.filter(filter)
            return rows if columns is None else rows.select(columns)
        return arrow.read(
            self.lake,
            TABLES[name],
            columns=columns,
            filter=filter,
            storage_options=self.storage_options,
        )

    def prefetch(self, log_id: str, names=None) -> None:
        """Read the log's rows of `names` (default REPORT_TABLES; those the lake has) all at once,
        in PREFETCH_THREADS threads (delta-rs and Arrow release the GIL while they open and
        read): a page then waits for its slowest table, not for the sum of them. A read that
        fails here is left to fail again where the page reads it, which says what it cost."""
        self.months(log_id)  # the ledger first: its month prunes every other read

        def one(name: str) -> None:
            try:
                if self.exists(name):
                    self.log_rows(name, log_id)
                    if name == "app_runs":
                        self.app_history(log_id)
            except Exception:
                pass

        todo = [n for n in names or REPORT_TABLES if (n, log_id) not in self._logs]
        todo.sort(key=lambda n: n != "app_runs")  # the longest read (with the history) first
        with ThreadPoolExecutor(PREFETCH_THREADS) as pool:
            list(pool.map(one, todo))

    def app_history(self, log_id: str) -> pa.Table | None:
        """Every run in gold/app_runs of the log's application (`umami_columns` of them), read once:
        the UMAMI panel's history, read by `prefetch` beside the log's rows. None when the log has
        no row there."""
        if log_id not in self._history:
            me = self.log_rows("app_runs", log_id)
            self._history[log_id] = (
                self.read(
                    "app_runs",
                    umami_columns(self.watch),
                    filter=pc.field("app") == me.column("app")[0].as_py(),
                )
                if me.num_rows
                else None
            )
        return self._history[log_id]

    def months(self, log_id: str) -> dict[str, str | None]:
        """{log_id: job_month} as bronze/logs holds it ({} when it does not), looked up once."""
        if log_id not in self._months:
            self._months[log_id] = (
                arrow.months_of(self.log_rows("logs", log_id)) if self.exists("logs") else {}
            )
        return self._months[log_id]

    def none_at_ingest(self, log_id: str) -> frozenset[str]:
        """The decoded tables (`DECODED`) ingest wrote no row of for the log, as its ledger row's
        `row_counts` says (every table a decode gave rows, since the first ingest): a log without
        HDF5 or DXT has no rows there, so its report opens no snapshot of them. Empty when the
        ledger has no counts for it (quarantined, or no ledger)."""
        if log_id not in self._absent:
            self._absent[log_id] = frozenset()
            if self.exists("logs"):
                ledger = self.log_rows("logs", log_id)
                counts = (
                    ledger.column("row_counts").to_pylist()
                    if "row_counts" in ledger.column_names
                    else []
                )
                if len(counts) == 1 and counts[0] is not None:
                    wrote = {name for name, n in counts[0] if n}
                    self._absent[log_id] = frozenset(DECODED - wrote)
        return self._absent[log_id]

    def log_rows(self, name: str, log_id: str) -> pa.Table:
        """Every column of the log's rows of an existing table, read once per report (only its
        month partition: `arrow.read_logs`): the sections and the IOFrame share them, so no table
        is read twice. One job's rows are few, except a large DXT trace's `io_ops`, which the
        IOFrame reads whole anyway."""
        key = (name, log_id)
        if key not in self._logs and name in self.none_at_ingest(log_id):
            self._logs[key] = arrow.empty(TABLES[name])  # nothing to open: no snapshot read
        if key not in self._logs:
            self._logs[key] = arrow.read_logs(
                self.lake,
                TABLES[name],
                log_id,
                storage_options=self.storage_options,
                months=self.months(log_id) if "job_month" in TABLES[name].partition_by else None,
            )
        return self._logs[key]

    def ioframe(self, log_id: str):
        """`IOFrame.from_lake(lake, log_id=...)`, from the rows this reader holds."""
        from apps.analysis import IOFrame
        from apps.analysis.frame import lake_tables

        def read(name: str, columns: list[str] | None) -> pa.Table:
            if not self.exists(name):  # as `arrow.read` gives a table not written yet
                return arrow.empty(TABLES[name], columns)
            return self.read(name, columns, log_id=log_id)

        return IOFrame.from_tables(lake_tables(read))


def _rows(t: pa.Table | None) -> list[dict]:
    return [] if t is None else t.to_pylist()


# ---- which log JOB means -------------------------------------------------------------------
def resolve_job(jobs: list[dict], query: str, ledger: list[dict] = ()) -> str:
    """The log_id JOB names among `jobs` (rows with log_id, jobid, exe, nprocs, start_time_sec):
    an exact log_id, else the one log whose log_id starts with it or whose jobid equals it.
    `ledger` (bronze/logs rows matching the prefix) explains a miss. Raises JobNotFound."""
    q = query.strip().lower()
    if not q:
        raise JobNotFound("JOB is empty: give a log_id, a prefix of one, or a jobid")
    exact = [j for j in jobs if j["log_id"] == q]
    if exact:
        return q
    hits = [
        j for j in jobs if j["log_id"].startswith(q) or (q.isdigit() and j.get("jobid") == int(q))
    ]
    if len(hits) == 1:
        return hits[0]["log_id"]
    if len(hits) > 1:
        hits.sort(key=lambda j: (j.get("start_time_sec") or 0, j["log_id"]))
        lines = [
            f"  {j['log_id']}  jobid {j.get('jobid')}  {j.get('nprocs')} procs  "
            f"{_when(j.get('start_time_sec'))}  {j.get('exe') or ''}"
            for j in hits[:MAX_CANDIDATES]
        ]
        more = f"\n  … and {len(hits) - MAX_CANDIDATES} more" if len(hits) > MAX_CANDIDATES else ""
        raise JobNotFound(
            f"{query!r} is ambiguous: {len(hits)} logs match; give a longer log_id prefix:\n"
            + "\n".join(lines)
            + more
        )
    for log in ledger:
        if log["log_id"].startswith(q) and log.get("status") == "quarantined":
            raise JobNotFound(
                f"log {log['log_id']} ({log.get('source_uri')}) was quarantined: "
                f"{log.get('reason') or 'no reason recorded'}; it has no job to report"
            )
    raise JobNotFound(f"no job matches {query!r} (a log_id, a prefix of one, or a jobid)")


def find_job(reader: LakeReader, query: str) -> str:
    """The log_id JOB names (`resolve_job`'s rule). A log_id or a prefix resolves through
    bronze/logs (the ledger: one row per log) and then only its candidates' months of bronze/jobs
    are read; a jobid (digits) is also looked up in the ledger's `jobid` column, or, in a ledger
    whose jobids are not filled yet (schemas/logs.py), in bronze/jobs' every month. Only a miss
    reads every month of bronze/jobs (a log the ledger lacks). The ledger's snapshot is opened
    once (`LakeReader.table`) for its up to four reads."""
    q = query.strip().lower()
    if not q:
        return resolve_job([], query)  # raises: JOB is empty
    if not reader.exists("jobs"):
        raise JobNotFound(
            f"the lake {reader.lake} has no bronze/jobs table (nothing ingested yet?)"
        )
    led = reader.table("logs")  # the ledger's snapshot, opened once for every read below
    if led is None:  # no ledger to look in: scan bronze/jobs, as before
        expr = pc.starts_with(pc.field("log_id"), q)
        if q.isdigit():
            expr = expr | (pc.field("jobid") == int(q))
        return resolve_job(_rows(reader.read("jobs", JOB_COLUMNS, filter=expr)), query)
    opts = reader.storage_options
    # every column of the matches (the page shows the log's ledger row): one scan of the ledger
    matches = arrow.ledger_matches(reader.lake, q, None, opts, table=led)
    ledger = _rows(matches)
    by_ledger = q.isdigit() and arrow.ledger_has_jobids(reader.lake, opts, table=led)
    if by_ledger:  # the logs of that jobid: three columns of the ledger, not bronze/jobs
        known = {r["log_id"] for r in ledger}
        found = arrow.ledger_by_jobid(reader.lake, int(q), opts, table=led)
        ledger += [r for r in _rows(found) if r["log_id"] not in known]
    months = {r["log_id"]: r["job_month"] for r in ledger}
    ids = [i for i, m in months.items() if m is not None]
    jobs = []
    if ids:
        jobs = _rows(
            arrow.read_logs(
                reader.lake,
                TABLES["jobs"],
                ids,
                JOB_COLUMNS,
                storage_options=reader.storage_options,
                months=months,
            )
        )
    if q.isdigit() and not by_ledger:
        by_jobid = reader.read("jobs", JOB_COLUMNS, filter=pc.field("jobid") == int(q))
        jobs += [j for j in _rows(by_jobid) if j["log_id"] not in months]
    if not jobs:  # a log with rows but no ledger row (older lakes): every month, as before
        by_prefix = reader.read("jobs", JOB_COLUMNS, filter=pc.starts_with(pc.field("log_id"), q))
        jobs = _rows(by_prefix)
    reader._months.update({i: {i: months[i]} for i in ids})
    log_id = resolve_job(jobs, query, ledger)
    row = matches.filter(pc.field("log_id") == log_id)
    if not row.num_rows:  # found by its jobid: its whole ledger row, one row group's read
        row = arrow.ledger_matches(reader.lake, log_id, None, opts, table=led)
    reader._logs[("logs", log_id)] = row
    return log_id


# ---- what the page shows ------------------------------------------------------------------
@dataclass
class Report:
    log_id: str
    title: str
    summary: list[tuple[str, str]]
    metadata: list[tuple[str, str]]
    tags: list[dict] | None  # None: the tags stage has not run on this lake / log
    covering: dict | None
    timeline_png: bytes | None
    timeline_note: str
    plan: list[dict] | None
    plan_models: list[str] = field(default_factory=list)
    plan_tiers: list[str] = field(default_factory=list)  # tiers the bandwidth model predicts
    notes: list[str] = field(default_factory=list)
    umami: dict | None = None  # None: no history to place the job in (umami_note says why)
    umami_png: bytes | None = None
    umami_note: str = ""
    advice: list[dict] | None = None  # None: the advise stage has not run on this job
    facts: dict = field(default_factory=dict)  # the job's figures as numbers (`--format json`)
    suspect: str | None = (
        None  # why the log's counters cannot be true (silver/job_features); None: fine
    )
    plan_provenance: list[dict] = field(
        default_factory=list
    )  # `model_provenance` of the plan's rows
    site: str | None = None  # the site profile's name (conf `site.name`): where commands come from

    sections: dict | None = None  # pydarshan's job-summary sections (apps/summary_sections.py)
    efficiency: str | None = (
        None  # `efficiency_line`: measured against the lake model's expectation
    )
    efficiency_facts: dict | None = None  # `efficiency_facts`: the same, as figures (JSON)


SUSPECT_EXCLUDED = (
    "Its throughput is excluded from models (train, labels), watch (regressions) and advice "
    "(run history): the figures below are the log's counters as they are."
)


ADVICE_ORDER = {"what_if": 0, "stripe": 1, "tag": 2, "none": 3}


def _advice(reader: LakeReader, log_id: str) -> list[dict] | None:
    """The job's gold/tuning_advice rows of its newest advice pass (highest `advised_with`):
    what-ifs by predicted speed-up, then the stripe setting, then the tags' recommendations."""
    rows = _rows(reader.read("tuning_advice", log_id=log_id))
    if not rows:
        return None

    def version(r):
        v = r.get("advised_with") or ""
        return int(v) if v.isdigit() else -1

    newest = max(version(r) for r in rows)
    rows = [r for r in rows if version(r) == newest]
    return sorted(
        rows,
        key=lambda r: (
            ADVICE_ORDER.get(r["kind"], 9),
            -(r.get("predicted_speedup") or 0),
            r["item"],
        ),
    )


def efficiency_facts(reader: LakeReader, log_id: str) -> dict | None:
    """The job's efficiency (gold/job_bandwidth_predictions.efficiency = measured / expected
    throughput, from the newest per-job model version that scored it; docs/fleet.md) with what it
    rests on, and `line`: one sentence on it, or on why there is none. None when no per-job
    model scored the job."""
    rows = _latest(_rows(reader.read("job_bandwidth_predictions", log_id=log_id)))
    if not rows:
        return None
    r = rows[0]
    model = f"{r['model_name']} v{r['model_version']}"
    eff = r.get("efficiency")
    if eff is not None:
        line = (
            f"This job got {eff:.2f} of what similar jobs on this file system get: "
            f"{num(r.get('throughput_mib_s'))} MiB/s measured, {num(r.get('predicted_throughput_mib_s'))} "
            f"MiB/s expected for its pattern on {r.get('tier') or '?'} ({model}, trained on this lake)."
        )
    elif r.get("training_origin") != "lake":
        line = (
            f"No efficiency: the per-job model ({model}) was not trained on this lake's jobs, and "
            "against another machine's benchmark the ratio means nothing."
        )
    else:
        line = f"No efficiency: {model} has no expected throughput for this job's tier or no measured one."
    return {
        "efficiency": eff,
        "measured_mib_s": r.get("throughput_mib_s"),
        "expected_mib_s": r.get("predicted_throughput_mib_s"),
        "tier": r.get("tier"),
        "model_name": r["model_name"],
        "model_version": str(r["model_version"]),
        "training_origin": r.get("training_origin"),
        "line": line,
    }


def efficiency_line(reader: LakeReader, log_id: str) -> str | None:
    """`efficiency_facts`' sentence; None when no per-job model scored the job."""
    facts = efficiency_facts(reader, log_id)
    return None if facts is None else facts["line"]


def _efficiency(reader: LakeReader, log_id: str) -> dict:
    facts = efficiency_facts(reader, log_id)
    return {"efficiency": facts and facts["line"], "efficiency_facts": facts}


def lake_facts_first(evidence) -> list:
    """An advice row's evidence with what this lake measured (`LAKE_FACTS`: the measured gain of a
    tier move, a precedent) first, the rest in its order: a row with many model facts still shows
    its measurements within the items the page shows."""
    items = list(evidence or [])
    mine = [e for e in items if str(e).startswith(LAKE_FACTS)]
    return mine + [e for e in items if not str(e).startswith(LAKE_FACTS)]


def capped(items: list, shown: int) -> tuple[list, int]:
    """(the first `shown` items, how many more): a list as the page shows it, "and N more"."""
    items = list(items or [])
    return items[:shown], max(0, len(items) - shown)


def _median(values) -> float | None:
    v = sorted(float(x) for x in values if x is not None and not math.isnan(float(x)))
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _span(values) -> tuple[float | None, float | None]:
    v = [float(x) for x in values if x is not None and not math.isnan(float(x))]
    return (min(v), max(v)) if v else (None, None)


def plan_groups(plan: list[dict] | None) -> list[dict]:
    """The placement plan by distinct setting: files alike in tier now, predicted tier and the
    bandwidth model's best tier form one row, with their count, a few of their names and the
    median of each figure over them (a 2,048-process job writing a file per rank is one row, not
    2,048). Largest groups first."""
    if not plan:
        return []
    groups: dict[tuple, list[dict]] = {}
    for p in plan:
        key = (p["tier"], p["predicted_tier"], p["best_bw_tier"], bool(p["move"]))
        groups.setdefault(key, []).append(p)
    out = []
    for (tier, predicted, best, move), rows in groups.items():
        names = sorted(r["file_name"] or "" for r in rows)
        shown, more = capped(names, EXAMPLE_FILES)
        tiers = sorted({t for r in rows for t in (r["by_tier"] or {})})
        out.append(
            {
                "tier": tier,
                "predicted_tier": predicted,
                "best_bw_tier": best,
                "move": move,
                "files": len(rows),
                "file_names": names,
                "examples": shown,
                "more": more,
                "probability": _median(r["probability"] for r in rows),
                "bandwidth_mib_s": _median(r["bandwidth_mib_s"] for r in rows),
                "predicted_bandwidth_mib_s": _median(r["predicted_bandwidth_mib_s"] for r in rows),
                "by_tier": {t: _median((r["by_tier"] or {}).get(t) for r in rows) for t in tiers},
                "speedup": _median(r["speedup"] for r in rows),
                "speedup_span": _span(r["speedup"] for r in rows),
            }
        )
    return sorted(out, key=lambda g: (-g["files"], str(g["tier"]), str(g["predicted_tier"])))


def advice_groups(advice: list[dict] | None) -> list[dict]:
    """The advice by distinct setting: what-if rows alike in kind, setting now, advised setting
    and model form one row with their file count, a few file names and the median predicted
    (and measured) speed-up; stripe and tag advice, one per job, stay one row each. In
    `_advice`'s order (what-ifs by speed-up first)."""
    if not advice:
        return []
    groups: dict[tuple, list[dict]] = {}
    for a in advice:
        if a["kind"] == "what_if":
            key = (
                "what_if",
                a.get("current"),
                a.get("advised"),
                a.get("model_name"),
                a.get("model_version"),
            )
        else:
            key = (a["kind"], a.get("item"), id(a))
        groups.setdefault(key, []).append(a)
    out = []
    for rows in groups.values():
        first = rows[0]
        names = sorted(
            {r.get("file_name") or r.get("item") or "" for r in rows}
            if first["kind"] == "what_if"
            else {first.get("item") or ""}
        )
        shown, more = capped(names, EXAMPLE_FILES)
        ev_shown, ev_more = capped(lake_facts_first(first.get("evidence")), EVIDENCE_SHOWN)
        out.append(
            {
                **first,
                "files": len(rows),
                "file_names": names,
                "examples": shown,
                "more": more,
                "predicted_speedup": _median(r.get("predicted_speedup") for r in rows),
                "measured_speedup": _median(r.get("measured_speedup") for r in rows),
                "speedup_span": _span(r.get("predicted_speedup") for r in rows),
                "evidence_shown": ev_shown,
                "evidence_more": ev_more,
            }
        )
    return out


def model_provenance(rows: list[dict] | None) -> list[dict]:
    """Each model that made `rows` (advice or prediction rows): name, version, alias, what it was
    trained on, its origin and the plain sentence of what its figures are worth here
    (`models.provenance.note`); `foreign` when it learnt from a benchmark, not this lake's jobs.
    Rows from before provenance was recorded give origin `unknown` and say so."""
    from models.provenance import note, origin_of

    out: dict[tuple, dict] = {}
    for r in rows or []:
        if not r.get("model_name"):
            continue
        key = (r["model_name"], str(r.get("model_version")))
        if key in out:
            continue
        trained_on = r.get("trained_on")
        origin = r.get("training_origin") or (origin_of(trained_on) if trained_on else "unknown")
        alias = r.get("model_alias")
        out[key] = {
            "model_name": key[0],
            "model_version": key[1],
            "model_alias": alias,
            "label": f"{key[0]} v{key[1]}" + (f" (@{alias})" if alias else ""),
            "trained_on": trained_on,
            "training_origin": origin,
            "note": note(origin, trained_on)
            if trained_on
            else "its training source was not recorded with these rows (scored before iolake "
            "recorded it): see the model's run in MLflow",
            "foreign": origin in ("benchmark", "shipped_benchmark"),
        }
    return sorted(out.values(), key=lambda p: (p["model_name"], p["model_version"]))


def provenance_groups(provs: list[dict]) -> list[dict]:
    """`model_provenance` entries alike in what they say (the same note) as one: their `labels`
    joined ("iolake-bandwidth v1 (@champion) and iolake-placement v1 (@champion)"), the note,
    `foreign` and the origin: a page says "trained on the shipped IOR sweep ..." once."""
    out: dict[str, dict] = {}
    for p in provs:
        g = out.setdefault(p["note"], {**p, "labels": []})
        g["labels"].append(p["label"])
    for g in out.values():
        g["label"] = " and ".join(g["labels"])
    return list(out.values())


def _when(sec) -> str:
    if sec is None:
        return "?"
    return dt.datetime.fromtimestamp(int(sec), dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def secs(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    x = float(x)
    if x >= 3600:
        return f"{x:,.1f} s ({x / 3600:.2f} h)"
    return f"{x:.3g} s" if x < 10 else f"{x:,.1f} s"


def time_bound(row: dict) -> str:
    """What a covering-set row's pure I/O time is (silver/covering_sets `time_source`, `exact`,
    `pure_io_time_min_s`): exact, or the bounds and where each comes from."""
    source = row.get("time_source")
    if row.get("exact") or (source is None and row.get("interval_source") in ("dxt", "recorder")):
        ops = (
            "Recorder calls" if (source or row.get("interval_source")) == "recorder" else "DXT ops"
        )
        return f"exact: the union of the traced {ops}"
    where = {
        "heatmap": "the READ/WRITE START/END counters cut to the log's non-empty HEATMAP bins",
        "counters": "the READ/WRITE START/END counters (no DXT, no HEATMAP)",
    }.get(source, "the READ/WRITE START/END counters (a row from before bounds were recorded)")
    text = f"an upper bound: at most {secs(row.get('pure_io_time_s'))}, from {where}"
    if row.get("pure_io_time_min_s") is not None:
        text += (
            f"; at least {secs(row['pure_io_time_min_s'])}, the slowest process's read and write "
            "time (per rank the longer of MPI-IO and POSIX, plus STDIO)"
        )
    return text


def num(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, float):
        return f"{x:,.{digits}g}" if abs(x) < 1000 else f"{x:,.1f}"
    return f"{x:,}"


def _latest(rows: list[dict]) -> list[dict]:
    """Rows of the newest model version of each model name."""

    def version(r):
        v = r["model_version"]
        return (0, int(v), "") if str(v).isdigit() else (1, 0, str(v))

    newest = {}
    for r in rows:
        if r["model_name"] not in newest or version(r) > version(newest[r["model_name"]]):
            newest[r["model_name"]] = r
    return [r for r in rows if r["model_version"] == newest[r["model_name"]]["model_version"]]


PLAN_KEYS = (
    "predicted_tier",
    "probability",
    "bandwidth_mib_s",
    "predicted_bandwidth_mib_s",
    "by_tier",
    "speedup",
    "best_bw_tier",
)


def placement_plan(
    place: list[dict], bw: list[dict]
) -> tuple[list[dict] | None, list[str], list[str]]:
    """(plan rows, models, tiers) of one job from its gold/placement_predictions and
    gold/bandwidth_predictions rows (newest version of each model). Either may be empty: a lake
    whose placement model was held back still shows its bandwidth plan, and the other way round;
    every row has every column (None where its model gave nothing). plan is None when both are."""
    if not place and not bw:
        return None, [], []
    place, bw = _latest(place), _latest(bw)
    by_file: dict[int, dict] = {}

    def file(r):
        return by_file.setdefault(
            r["record_id"],
            {"file_name": r["file_name"], "tier": r["tier"], **dict.fromkeys(PLAN_KEYS)},
        )

    for r in place:
        file(r).update(predicted_tier=r["predicted_tier"], probability=r["probability"])
    for r in bw:
        by_tier = r.get("bandwidth_by_tier") or {}
        by_tier = (
            dict(by_tier) if not isinstance(by_tier, dict) else by_tier
        )  # Arrow maps: (key, value) pairs
        file(r).update(
            bandwidth_mib_s=r["bandwidth_mib_s"],
            predicted_bandwidth_mib_s=r["predicted_bandwidth_mib_s"],
            by_tier=by_tier,
            speedup=r.get("speedup"),
            best_bw_tier=r.get("best_tier"),
        )
    plan = sorted(by_file.values(), key=lambda r: r.get("file_name") or "")
    for r in plan:
        r["move"] = r["predicted_tier"] is not None and r["predicted_tier"] != r["tier"]
    models = sorted({f"{r['model_name']} v{r['model_version']}" for r in [*place, *bw]})
    return plan, models, sorted({t for r in plan for t in (r["by_tier"] or {})})


COUNTER_TIMES = {  # module -> (prefix): the counters' first-start / last-end of reads and writes
    "posix": "POSIX",
    "stdio": "STDIO",
}


def counter_intervals(reader: LakeReader, log_id: str):
    """Operation-like rows (rank, op read|write, start_s, end_s) from Darshan's counters, for a log
    with no timed operations: each record's `<M>_F_READ_START_TIMESTAMP` to
    `<M>_F_READ_END_TIMESTAMP` (writes alike), POSIX and STDIO (MPI-IO's bytes reach POSIX).
    An interval spans the record's first to last operation: an upper bound on its busy time."""
    import pandas as pd

    parts = []
    for module, p in COUNTER_TIMES.items():
        cols = ["rank"] + [
            f"{p}_F_{k}_{e}_TIMESTAMP" for k in ("READ", "WRITE") for e in ("START", "END")
        ]
        t = reader.read(module, cols, log_id=log_id)
        if t is None or not t.num_rows:
            continue
        df = t.to_pandas()
        for k in ("READ", "WRITE"):
            s, e = df[f"{p}_F_{k}_START_TIMESTAMP"], df[f"{p}_F_{k}_END_TIMESTAMP"]
            keep = (e > 0) & (e >= s)
            parts.append(
                pd.DataFrame(
                    {
                        "rank": df.loc[keep, "rank"].astype("int64"),
                        "op": k.lower(),
                        "start_s": s[keep].astype(float),
                        "end_s": e[keep].astype(float),
                    }
                )
            )
    if not parts:
        return pd.DataFrame(columns=["rank", "op", "start_s", "end_s"])
    return pd.concat(parts, ignore_index=True)


def timeline(reader: LakeReader, log_id: str, title: str) -> tuple[Callable[[], bytes] | None, str]:
    """(the call that draws the PNG, the note under it): the ops of DXT or Recorder
    (`IOFrame.timeline`: per-rank rows up to `timeline.MAX_RANK_ROWS` ranks, a rank-by-time
    matrix with marginal sums past it), else the log's HEATMAP, else the counters' read / write
    intervals (`counter_intervals`), covering-set members outlined. The data is read and chosen
    here; the call draws it (`build` draws it beside the other figures, apps/drawing.py). A
    failure is the note and no call: a report without its picture beats no report."""
    from apps.analysis import timeline as draw

    try:
        frame = reader.ioframe(log_id)
        if frame.timeline_source == "heatmap":
            fn, kwargs = frame.timeline_call(title=f"{title} · HEATMAP")
            width, _ = draw.common_bins(frame.heatmap)
            return partial(png_of, fn, **kwargs), (
                "Source: Darshan's HEATMAP module (the log has no DXT or Recorder data): the "
                f"bytes each rank moved per {width:g} s bin, summed over ranks on top and over "
                "time at the side."
            )

        def many(ranks: int, per_rank: str) -> str:
            if ranks <= draw.MAX_RANK_ROWS:
                return ""
            return (
                f" More ranks ({ranks:,}) than fit as rows: ranks are grouped, the number of "
                f"ranks in I/O over time is on top and each rank's {per_rank} at the side."
            )

        if len(frame.ops):
            fn, kwargs = frame.timeline_call(title=title)
            note = "Source: the trace's timed operations (DXT or Recorder)."
            return partial(png_of, fn, **kwargs), note + many(
                frame.ops["rank"].nunique(), "I/O time"
            )
        ops = counter_intervals(reader, log_id)
        if not len(ops) and not len(frame.covering):
            return None, (
                "Nothing to draw: the trace holds no timed operations and the log has no "
                "covering set."
            )
        cover = frame.covering if len(frame.covering) else None
        call = partial(png_of, draw.draw, ops, cover, title=f"{title} · counters")
        ranks = ops.loc[ops["rank"] >= 0, "rank"].nunique()
        note = (
            "The trace holds no timed operations (no DXT, Recorder or HEATMAP data): each bar "
            "spans a file record's first to last read or write from Darshan's counters (an "
            "upper bound on when it did I/O); covering-set members outlined."
        )
        return call, note + many(ranks, "summed intervals")
    except Exception as e:
        return None, f"The timeline could not be drawn: {type(e).__name__}: {e}"


def build(reader: LakeReader, log_id: str, draw: bool = True) -> Report:
    """The report of one log: its rows read, its findings put together and, with `draw`, its
    figures drawn (apps/drawing.py: in parallel where it can; `--format text` and `json` show no
    figure and skip them)."""
    notes: list[str] = []
    reader.prefetch(log_id)
    (job,) = _rows(reader.read("jobs", log_id=log_id))[:1] or [None]
    if job is None:
        raise JobNotFound(f"log {log_id} has no row in bronze/jobs")
    (ledger,) = _rows(reader.read("logs", log_id=log_id))[:1] or [{}]
    (feat,) = _rows(reader.read("job_features", log_id=log_id))[:1] or [None]
    files = reader.read("files", ["record_id", "name", "fs_type"], log_id=log_id)
    names = (
        dict(zip(files["record_id"].to_pylist(), files["name"].to_pylist()))
        if files is not None
        else {}
    )
    fs_types = {f for f in files["fs_type"].to_pylist() if f} if files is not None else set()
    lustre = reader.read("lustre", ["log_id"], log_id=log_id)
    if lustre is not None and lustre.num_rows:  # Lustre files whose path the mount table misses
        fs_types.add("lustre")

    exe = job.get("exe") or ""
    # a Recorder trace has no scheduler job id: name the trace's format instead of "job None"
    who = (
        f"job {job['jobid']}"
        if job.get("jobid") is not None
        else f"{ledger.get('format') or 'untitled'} trace".capitalize()
    )
    program = (feat or {}).get("program") or (
        exe.split()[0].rsplit("/", 1)[-1] if exe.strip() else ""
    )
    title = who + (f" · {program}" if program else "") + f" · log {log_id[:12]}"
    f = feat or {}
    summary = [
        ("log_id", log_id),
        *((k, "—" if job.get(k) is None else str(job[k])) for k in ("jobid", "uid")),
        ("executable", exe or "—"),
        ("processes", num(job.get("nprocs"))),
        ("start", _when(job.get("start_time_sec"))),
        ("end", _when(job.get("end_time_sec"))),
        ("run time", secs(job.get("run_time_s"))),
    ]
    if feat:
        summary += [
            ("bytes read", human_bytes(f.get("bytes_read"), exact=True)),
            ("bytes written", human_bytes(f.get("bytes_written"), exact=True)),
            (
                "read / write / metadata time",
                " / ".join(secs(f.get(k)) for k in ("read_time_s", "write_time_s", "meta_time_s")),
            ),
            ("I/O time (slowest process; POSIX + STDIO with metadata)", secs(f.get("io_time_s"))),
            (
                "bandwidth",
                f"{num(f.get('throughput_mib_s'))} MiB/s"
                if f.get("throughput_mib_s") is not None
                else "—",
            ),
            (
                "files with I/O (shared)",
                f"{num(f.get('file_count'))} ({num(f.get('shared_file_count'))} shared)",
            ),
            (
                "requests read / write",
                f"{num(f.get('read_requests'))} / {num(f.get('write_requests'))}",
            ),
            (
                "metadata time share",
                "—" if f.get("meta_time_share") is None else f"{100 * f['meta_time_share']:.2f} %",
            ),
            (
                "slowest / fastest rank time",
                f"{secs(f.get('slowest_rank_time_s'))} / {secs(f.get('fastest_rank_time_s'))}",
            ),
            ("interfaces", ", ".join(f.get("interfaces") or []) or "—"),
            ("tiers", ", ".join(f.get("tiers") or []) or "—"),
        ]
    else:
        notes.append(
            "silver/job_features has no row for this log yet: run the features stage for bytes, "
            "I/O time and bandwidth"
        )
    summary += [
        ("file records", num(len(names))),
        ("modules", ", ".join(ledger.get("modules") or []) or "—"),
    ]
    if ledger.get("partial_modules"):
        summary.append(("partial modules", ", ".join(ledger["partial_modules"])))
    summary += [
        ("trace", f"{ledger.get('format') or '?'} {ledger.get('format_version') or ''}".strip()),
        ("source", ledger.get("source_uri") or "—"),
        ("ledger status", ledger.get("status") or "—"),
    ]
    if ledger.get("notes"):
        summary.append(("notes", "; ".join(ledger["notes"])))
    metadata = sorted((str(k), str(v)) for k, v in (job.get("metadata") or []))

    tags = None
    tag_rows = reader.read("bottleneck_tags", log_id=log_id)
    if tag_rows is not None and tag_rows.num_rows:
        from schemas.bottleneck_tags import CATALOG, recommendation

        tags = sorted(
            _rows(tag_rows), key=lambda r: (SEVERITY_ORDER.get(r["severity"], 9), r["tag"])
        )
        for t in tags:  # code, Drishti's codes and the recommendation, from the one catalogue
            known = CATALOG.get(t["tag"])
            t["code"], t["drishti"] = (known.code, "/".join(known.drishti)) if known else ("", "")
            # in the words of the job's file systems: Lustre commands only for files on Lustre
            t["recommendation"] = recommendation(t["tag"], fs_types)
            t["evidence"] = list(t.get("evidence") or [])
            t["evidence_shown"], t["evidence_more"] = capped(t["evidence"], EVIDENCE_SHOWN)
    elif tag_rows is not None or reader.exists("job_features"):
        notes.append("no bottleneck tags for this log yet: run the tags stage")

    covering = None
    cover_rows = _rows(reader.read("covering_sets", log_id=log_id))
    if cover_rows:
        cover_rows.sort(key=lambda r: (r["start_s"], r["rank"]))
        for r in cover_rows:
            r["file_name"] = names.get(r["record_id"], f"<record {r['record_id']}>")
        first = cover_rows[0]
        covering = {
            "members": cover_rows,
            "cover_size": first["cover_size"],
            "n_intervals": first["n_intervals"],
            "pure_io_time_s": first["pure_io_time_s"],
            "proven": first.get("cover_proven_minimum") is not False,
            "time_source": first.get("time_source"),
            "exact": first.get("exact"),
            "pure_io_time_min_s": first.get("pure_io_time_min_s"),
            "time_note": time_bound(first),
        }  # null: a row from before the flag

    drawings = Drawings()
    drawn: dict[str, bytes] = {}  # figure -> PNG, once `drawings` is rendered

    def keep(name: str, failed: str) -> Callable[[bytes | None, str | None], None]:
        def done(png: bytes | None, error: str | None) -> None:
            if png is not None:
                drawn[name] = png
            else:
                drawn[f"{name}_note"] = f"{failed}: {error}"

        return done

    call, note = timeline(reader, log_id, f"{who} · log {log_id[:12]}")
    if call is not None:
        drawings.add(call, done=keep("timeline", "The timeline could not be drawn"))
    place_rows = _rows(reader.read("placement_predictions", log_id=log_id))
    bw_rows = _rows(reader.read("bandwidth_predictions", log_id=log_id))
    plan, models, plan_tiers = placement_plan(place_rows, bw_rows)
    plan_provenance = model_provenance(
        [*_latest(place_rows), *_latest(bw_rows)] if plan is not None else []
    )

    try:
        panel, umami_note = umami(reader, log_id)
    except Exception as e:  # a report without its UMAMI panel beats no report
        panel, umami_note = (
            None,
            f"No UMAMI panel: the history could not be read: {type(e).__name__}: {e}",
        )
    if panel is not None and any(not m["note"] for m in panel["metrics"]):
        drawings.add(
            partial(png_of, draw_umami, panel["metrics"]),
            done=keep("umami", "The UMAMI panel could not be drawn"),
        )
    try:
        from apps.summary_sections import sections as summary_sections

        sections = summary_sections(reader, log_id, job, drawings)
    except Exception as e:  # a report without these sections beats no report
        sections = None
        notes.append(f"the job-summary sections could not be computed: {type(e).__name__}: {e}")
    if draw:
        drawings.render()
    png, note = drawn.get("timeline"), drawn.get("timeline_note", note)
    umami_png, umami_note = drawn.get("umami"), drawn.get("umami_note", umami_note)
    facts = {
        "jobid": job.get("jobid"),
        "exe": exe or None,
        "nprocs": job.get("nprocs"),
        "start": _when(job.get("start_time_sec")) if job.get("start_time_sec") else None,
        "run_time_s": job.get("run_time_s"),
        **{
            k: f.get(k)
            for k in (
                "bytes_read",
                "bytes_written",
                "read_time_s",
                "write_time_s",
                "meta_time_s",
                "io_time_s",
                "throughput_mib_s",
                "file_count",
                "shared_file_count",
            )
        },
    }
    return Report(
        facts=facts,
        log_id=log_id,
        title=title,
        summary=summary,
        metadata=metadata,
        tags=tags,
        covering=covering,
        timeline_png=png,
        timeline_note=note,
        plan=plan,
        plan_models=models,
        plan_tiers=plan_tiers,
        notes=notes,
        umami=panel,
        umami_png=umami_png,
        umami_note=umami_note,
        advice=_advice(reader, log_id),
        suspect=(f.get("suspect_reason") or "flagged") if f.get("suspect") else None,
        plan_provenance=plan_provenance,
        site=reader.site,
        sections=sections,
        **_efficiency(reader, log_id),
    )


# ---- UMAMI: this job against its application's history --------------------------------------
# pytokio's UMAMI colour scale (tokio/analysis/umami.py), from the worst quarter to the best
UMAMI_COLOURS = ("#DA0017", "#FD6A07", "#40A43A", "#2C69A9")
UMAMI_VERDICTS = ("worst quarter", "second-worst quarter", "second-best quarter", "best quarter")
UMAMI_PLACES = (
    "at or below their first quartile",
    "between their first quartile and median",
    "between their median and third quartile",
    "above their third quartile",
)
UMAMI_LINE = "#853692"  # pytokio's history line
# The history plot draws an application's newest runs only: pytokio's UMAMI plots the window its
# caller gives it (TOKIO-ABC: weeks of daily runs), and thousands of runs are one purple block whose
# drawing grows with the history (decision 0057). The quartiles, the box plot and the moving
# averages keep every earlier run.
UMAMI_DRAWN = 500
UMAMI_METRICS = {  # gold/app_runs column -> (label, unit on the plot's axis, formatter of one value)
    "bandwidth_mib_s": ("I/O bandwidth (slowest process)", "MiB/s", lambda v: f"{v:,.1f} MiB/s"),
    "io_time_s": ("I/O time (slowest process)", "s", lambda v: secs(v)),
    "meta_time_share": ("metadata share of I/O time", "%", lambda v: f"{100 * v:.2f} %"),
    "bytes": ("bytes read + written", "bytes", lambda v: human_bytes(v, exact=True)),
}


def _metric_info(name: str):
    return UMAMI_METRICS.get(name, (name, "", lambda v: num(float(v))))


def _fmt(name: str, v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return _metric_info(name)[2](v)


def _stamp(t) -> str:
    if t is None:
        return "—"
    import pandas as pd

    if t is pd.NaT or (isinstance(t, float) and math.isnan(t)):
        return "—"
    return (
        pd.Timestamp(t).tz_convert("UTC").strftime("%Y-%m-%d %H:%M UTC")
        if pd.Timestamp(t).tzinfo
        else pd.Timestamp(t).strftime("%Y-%m-%d %H:%M UTC")
    )


def _regression_row(r: dict, metric: str) -> dict:
    w = r.get("weather")
    peers, dropped = r.get("weather_peers"), r.get("weather_dropped")
    if w is None:
        weather = "— (no file system or no peer run known)"
    else:
        weather = (
            f"{'yes' if w else 'no'}: {dropped} of {peers} other applications on {r.get('fs')} "
            f"dropped in the same window" + (" (the file system's weather)" if w else "")
        )
    return {
        "rule": r["rule"],
        "value": _fmt(metric, r["value"]),
        "baseline": _fmt(metric, r["baseline"]),
        "change": f"{100 * r['change']:+.1f} %",
        "threshold_name": r["threshold_name"],
        "threshold": num(r["threshold"]),
        "score": num(r.get("score")),
        "since": _stamp(r.get("since")),
        "baseline_runs": f"{r['baseline_runs']} runs, {_stamp(r['baseline_first'])} – "
        f"{_stamp(r['baseline_last'])}",
        "weather": weather,
        "weather_flag": "" if w is None else ("yes" if w else "no"),
    }


def umami_columns(watch) -> list[str]:
    """The gold/app_runs columns the UMAMI panel reads: the key, the start and the metrics of conf
    `watch.metrics` the table has."""
    known = set(TABLES["app_runs"].columns)
    return ["log_id", "app", "start", *[m.name for m in watch.metrics if m.name in known]]


def umami(reader: LakeReader, log_id: str) -> tuple[dict | None, str]:
    """The UMAMI section of the page: ({app, n_earlier, first, last, metrics: [...]}, "") for a job
    whose application has at least `watch.min_history` earlier runs in gold/app_runs, else
    (None, the one-line reason). Each metric: its history, moving averages, quartiles of the
    earlier runs, this job's value and quartile (`features.regressions.umami_panel`, the data of
    `iolake watch`), and the job's gold/regressions rows of that metric."""
    import pandas as pd

    from features import regressions

    watch = reader.watch
    if watch is None:
        return None, "No UMAMI panel: the configuration has no watch settings."
    if not reader.exists("app_runs"):
        return None, (
            "No UMAMI panel: the lake has no gold/app_runs table (the watch stage has not run), "
            "so there is no history to place this job in."
        )
    known = set(TABLES["app_runs"].columns)
    metrics = [(m.name, m.worse) for m in watch.metrics if m.name in known]
    unknown = [m.name for m in watch.metrics if m.name not in known]
    me = reader.read("app_runs", umami_columns(watch), log_id=log_id).to_pandas()
    if me.empty:
        return None, (
            "No UMAMI panel: gold/app_runs has no row for this job (the watch stage has not run since "
            "it was ingested, or the job has no start time)."
        )
    app, at = str(me["app"].iloc[0]), me["start"].iloc[0]
    hist = reader.app_history(log_id).to_pandas()
    earlier = hist[hist["start"] < at]
    need = int(watch.min_history)
    if len(earlier) < need:
        return None, (
            f"No UMAMI panel: {len(earlier)} earlier run{'s' if len(earlier) != 1 else ''} of application "
            f"{app} in gold/app_runs, fewer than the {need} (watch.min_history) its history needs."
        )
    # the job's history: the runs that started before it, then the job ("today")
    h = pd.concat([earlier, me.iloc[:1]], ignore_index=True)
    p = regressions.Params.from_conf(watch)
    panel = regressions.umami_panel(h, metrics, p, app=app)
    flagged = (
        _rows(reader.read("regressions", log_id=log_id)) if reader.exists("regressions") else None
    )
    out = []
    for metric, worse in metrics:
        label, unit, _ = _metric_info(metric)
        d = panel["metrics"][metric]
        own = me[metric].iloc[0]
        m = {
            "name": metric,
            "label": label,
            "unit": unit,
            "worse": worse,
            "note": "",
            "regressions": [],
            "better": "higher" if worse == "lower" else "lower",
        }
        series = d["series"]
        if own is None or pd.isna(own) or own <= 0:
            m["note"] = (
                f"This job has no {label} (none recorded, or no I/O of that kind): it is not placed in "
                f"its history."
            )
        elif len(series) - 1 < need:
            m["note"] = (
                f"Only {len(series) - 1} earlier runs of this application have a {label}, fewer than "
                f"{need} (watch.min_history)."
            )
        else:
            q = int(d["today_quartile"])
            drawn = min(UMAMI_DRAWN, len(series))  # the newest runs the plot draws
            rank = q if worse == "lower" else 5 - q  # 1 = the worst quarter .. 4 = the best
            m.update(
                today=float(d["today"]),
                today_text=_fmt(metric, d["today"]),
                quartile=q,
                rank=rank,
                colour=UMAMI_COLOURS[rank - 1],
                verdict=UMAMI_VERDICTS[rank - 1],
                n_past=len(series) - 1,
                place=UMAMI_PLACES[q - 1],
                n_short=min(p.short_window, len(series)),
                n_long=min(p.long_window, len(series)),
                quartiles=[
                    (k, d[k], _fmt(metric, d[k])) for k in ("min", "q1", "median", "q3", "max")
                ],
                sma_short=float(d["sma_short"][-1]),
                sma_long=float(d["sma_long"][-1]),
                short_window=p.short_window,
                long_window=p.long_window,
                vs_median=f"{100 * (d['today'] / d['median'] - 1):+.1f} %",
                sma_cross=f"{100 * (d['sma_short'][-1] / d['sma_long'][-1] - 1):+.1f} %",
                series=series,
                sma_short_series=d["sma_short"],
                sma_long_series=d["sma_long"],
                n_drawn=drawn,
                drawn_from=_stamp(series["start"].iloc[-drawn]),
            )
            m["sma_short_text"], m["sma_long_text"] = (
                _fmt(metric, m["sma_short"]),
                _fmt(metric, m["sma_long"]),
            )
        if flagged is not None:
            m["regressions"] = [
                _regression_row(r, metric) for r in flagged if r["metric"] == metric
            ]
        out.append(m)
    rules = ", ".join(watch.rules)
    return {
        "app": app,
        "n_earlier": len(earlier),
        "first": _stamp(earlier["start"].min()),
        "last": _stamp(earlier["start"].max()),
        "today": _stamp(at),
        "metrics": out,
        "rules": rules,
        "regressions_table": flagged is not None,
        "other_regressions": sorted({r["metric"] for r in flagged or []} - {m for m, _ in metrics}),
        "unknown_metrics": unknown,
    }, ""


def draw_umami(metrics: list[dict], path: str) -> str:
    """One row per metric with a placed value: the history over run start (line; its newest
    `n_drawn` runs, `UMAMI_DRAWN` at most), the moving averages over the short and long windows,
    this job's value as a large point coloured by its quartile (red: the worst quarter, in the
    direction the metric is better), and beside it a box plot of every earlier run with the same
    point."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure

    rows = [m for m in metrics if not m["note"]]
    fig = Figure(figsize=(10, 0.5 + 2.5 * len(rows)), dpi=100)
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(len(rows), 2, width_ratios=(6, 1), wspace=0.04)
    for i, m in enumerate(rows):
        ax = fig.add_subplot(grid[i, 0])
        box = fig.add_subplot(grid[i, 1], sharey=ax)
        s = m["series"]
        every = s["value"].to_numpy(dtype=float)
        n = m["n_drawn"]
        s = s.iloc[-n:]
        x = s["start"].dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
        y = every[-n:]
        newest = f", the newest {n}" if n < len(every) else ""
        ax.plot(
            x,
            y,
            color=UMAMI_LINE,
            lw=1,
            marker="o",
            ms=2.5,
            label=f"runs of this application{newest}",
        )
        ax.plot(
            x,
            m["sma_short_series"][-n:],
            color="#222222",
            lw=1.2,
            ls="--",
            label=f"moving average, {m['short_window']} runs",
        )
        ax.plot(
            x,
            m["sma_long_series"][-n:],
            color="#8c8c8c",
            lw=1.6,
            label=f"moving average, {m['long_window']} runs",
        )
        today = dict(s=110, color=m["colour"], edgecolors="black", linewidths=0.8, zorder=5)
        ax.scatter(
            x[-1:], y[-1:], label=f"this job: quartile {m['quartile']} ({m['verdict']})", **today
        )
        if every.max() / every.min() > 30:
            ax.set_yscale("log")
        ax.set_ylabel(m["unit"], fontsize=9)
        ax.set_title(f"{m['label']} ({m['better']} is better)", fontsize=10, loc="left")
        locator = AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=7, framealpha=0.85)
        past = every[:-1]
        box.boxplot(
            past,
            widths=0.6,
            patch_artist=True,
            showfliers=True,
            boxprops=dict(facecolor="#e8e8e8", edgecolor="#444444"),
            medianprops=dict(color="#222222"),
            whiskerprops=dict(color="#444444"),
            capprops=dict(color="#444444"),
            flierprops=dict(
                marker="o", markersize=3, markerfacecolor="none", markeredgecolor="#666666"
            ),
        )
        box.scatter([1], y[-1:], **today)
        box.set_xticks([1], [f"{len(past):,} earlier"], fontsize=8)
        box.tick_params(axis="y", labelleft=False)
        box.grid(axis="y", alpha=0.3)
    height = fig.get_figheight()
    fig.subplots_adjust(
        left=0.08, right=0.98, top=1 - 0.35 / height, bottom=0.5 / height, hspace=0.6
    )
    fig.savefig(path)
    return path


# ---- the page ------------------------------------------------------------------------------
TEMPLATE_DIR = Path(__file__).parent / "templates"  # report.html.j2, shipped as package data
TEMPLATE_NAME = "report.html.j2"


def render(report: Report) -> str:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,  # every value reaches the page HTML-escaped, whatever the file's name
        undefined=StrictUndefined,
        trim_blocks=False,
    )
    env.filters.update(num=num, secs=secs, hbytes=human_bytes)
    b64 = base64.b64encode(report.timeline_png).decode("ascii") if report.timeline_png else ""
    umami_b64 = base64.b64encode(report.umami_png).decode("ascii") if report.umami_png else ""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return env.get_template(TEMPLATE_NAME).render(
        r=report,
        timeline_b64=b64,
        umami_b64=umami_b64,
        generated=now,
        severities=severity_counts(report.tags),
        evidence_cap=EVIDENCE_SHOWN,
        plan_groups=plan_groups(report.plan),
        advice_groups=advice_groups(report.advice),
        suspect_excluded=SUSPECT_EXCLUDED,
        advice_provenance=provenance_groups(model_provenance(report.advice)),
        plan_provenance=provenance_groups(report.plan_provenance),
        **section_context(report),
    )


def section_context(report: Report) -> dict:
    """What summary_sections.html.j2 needs: the sections, their PNGs as base64, nprocs, run time."""
    s = report.sections or {}
    pngs = {k: base64.b64encode(v).decode("ascii") for k, v in s.items() if k.endswith("_png")}
    return dict(
        s=report.sections,
        s_b64=pngs,
        s_nprocs=report.facts.get("nprocs"),
        s_run_time=report.facts.get("run_time_s"),
    )


def severity_counts(tags: list[dict] | None) -> list[tuple[str, int]]:
    """(severity, how many findings) for high, warn, info; `no_issue` is no finding."""
    tags = [t for t in tags or [] if t["tag"] != NO_ISSUE]
    return [(s, sum(t["severity"] == s for t in tags)) for s in SEVERITY_ORDER]


# ---- the terminal summary and the machine-readable one ---------------------------------------
def to_json(report: Report) -> dict:
    """The report's facts as JSON-ready data (`--format json`; keys in docs/reports.md): every
    finding with all its evidence, the covering set, the plan and advice groups."""

    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        if isinstance(v, (str, int, float, bool)) or v is None:
            return v
        return str(v)

    findings = [
        {
            "severity": t["severity"],
            "tag": t["tag"],
            "code": t.get("code") or None,
            "drishti": [c for c in (t.get("drishti") or "").split("/") if c],
            "message": t["message"],
            "metric": t["metric"],
            "value": t["value"],
            "threshold_name": t["threshold_name"],
            "threshold": t["threshold"],
            "recommendation": t.get("recommendation") or None,
            "evidence": t.get("evidence") or [],
        }
        for t in report.tags or []
    ]
    cover = report.covering
    group_keys = ("examples", "more", "message", "evidence_shown", "evidence_more")
    return clean(
        {
            "log_id": report.log_id,
            "title": report.title,
            "job": report.facts,
            "suspect": None
            if report.suspect is None
            else {
                "reason": report.suspect,
                "excluded_from": ["models", "watch", "advice"],
            },
            "findings": None if report.tags is None else findings,
            "covering_set": None
            if cover is None
            else {
                "cover_size": cover["cover_size"],
                "n_intervals": cover["n_intervals"],
                "pure_io_time_s": cover["pure_io_time_s"],
                "time_source": cover.get("time_source"),
                "exact": cover.get("exact"),
                "pure_io_time_min_s": cover.get("pure_io_time_min_s"),
                "time_note": cover.get("time_note"),
                "proven_minimum": cover["proven"],
                "members": [
                    {
                        k: m.get(k)
                        for k in (
                            "rank",
                            "file_name",
                            "start_s",
                            "end_s",
                            "share_s",
                            "interval_source",
                        )
                    }
                    for m in cover["members"]
                ],
            },
            "timeline": report.timeline_note,
            "efficiency": report.efficiency_facts,
            "advice": None
            if report.advice is None
            else [
                {
                    k: g.get(k)
                    for k in (
                        "kind",
                        "item",
                        "current",
                        "advised",
                        "files",
                        "file_names",
                        "predicted_speedup",
                        "measured_speedup",
                        "model_name",
                        "model_version",
                        "model_alias",
                        "trained_on",
                        "training_origin",
                        "message",
                        "evidence",
                    )
                }
                for g in advice_groups(report.advice)
            ],
            "advice_models": model_provenance(report.advice),
            "site": report.site,
            "plan": None
            if report.plan is None
            else {
                "models": report.plan_models,
                "provenance": report.plan_provenance,
                "groups": [
                    {k: v for k, v in g.items() if k not in group_keys}
                    for g in plan_groups(report.plan)
                ],
            },
            "summary_sections": None
            if report.sections is None
            else {k: v for k, v in report.sections.items() if not k.endswith("_png")},
            "notes": report.notes,
        }
    )


CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # C0 and C1 controls, ESC among them
SEVERITY_COLOUR = {"high": "\033[1;31m", "warn": "\033[1;33m", "info": "\033[1;36m"}


def to_text(report: Report, colour: bool = False, width: int = 100) -> str:
    """The terminal summary (`--format text`), as Drishti prints its insights: the job in two
    lines, then each finding by severity with its evidence (capped) and recommendation, the
    covering set and what to change; plain text within `width` columns, ANSI colour only when
    `colour` (stdout is a terminal)."""
    import textwrap

    def wrap(text: str, first: str, rest: str) -> list[str]:
        text = CONTROL.sub("?", text)  # a trace's name must not drive the terminal
        return textwrap.wrap(
            text,
            width,
            initial_indent=first,
            subsequent_indent=rest,
            break_on_hyphens=False,
            break_long_words=True,
        ) or [first.rstrip()]

    def label(sev: str) -> str:
        tag = f"[{sev.upper()}]".ljust(7)
        return f"{SEVERITY_COLOUR[sev]}{tag}\033[0m" if colour and sev in SEVERITY_COLOUR else tag

    f = report.facts
    out = wrap(f"iolake report: {report.title}", "", "  ")
    out += wrap(f"log {report.log_id}", "", "  ")
    job = [
        f"{num(f.get('nprocs'))} processes" if f.get("nprocs") is not None else None,
        f"run {secs(f.get('run_time_s'))}" if f.get("run_time_s") is not None else None,
        f"read {human_bytes(f.get('bytes_read'))}" if f.get("bytes_read") is not None else None,
        f"written {human_bytes(f.get('bytes_written'))}"
        if f.get("bytes_written") is not None
        else None,
        f"I/O time (slowest process; POSIX + STDIO with metadata) {secs(f.get('io_time_s'))}"
        if f.get("io_time_s") is not None
        else None,
    ]
    out += wrap(" | ".join(j for j in job[:2] if j), "", "  ")
    out += wrap(" | ".join(j for j in job[2:] if j), "", "  ")
    if report.efficiency:
        out += wrap(report.efficiency, "", "  ")
    if report.suspect:
        out.append("")
        out += wrap(f"SUSPECT: {report.suspect}. {SUSPECT_EXCLUDED}", "", "  ")
    out.append("")
    if report.tags is None:
        out += wrap("FINDINGS: none yet (the tags stage has not run on this job).", "", "  ")
    else:
        counts = ", ".join(f"{n} {s}" for s, n in severity_counts(report.tags))
        out.append(f"FINDINGS ({counts})")
        for t in report.tags:
            code = f" ({t['code']})" if t.get("code") else ""
            head = f"{t['tag']}{code}: {t['message']}"
            lines = wrap(head, "  " + " " * 7, "  " + " " * 7)
            lines[0] = "  " + label(t["severity"]) + lines[0][9:]
            out += lines
            if t.get("evidence"):
                shown = ", ".join(t["evidence_shown"])
                more = f" and {t['evidence_more']} more" if t["evidence_more"] else ""
                out += wrap(f"evidence: {shown}{more}", " " * 9, " " * 11)
            if t.get("recommendation"):
                out += wrap(f"recommendation: {t['recommendation']}", " " * 9, " " * 11)
    cover = report.covering
    if cover:
        out.append("")
        kind = "minimum" if cover["proven"] else "greedy"
        out += wrap(
            f"COVERING SET: {cover['cover_size']} of {cover['n_intervals']} (rank, file) members "
            f"cover the pure I/O time of {secs(cover['pure_io_time_s'])} ({kind})",
            "",
            "  ",
        )
        if cover.get("time_note"):
            out += wrap(f"pure I/O time: {cover['time_note']}", "  ", "  ")
    groups = advice_groups(report.advice)
    if groups:
        out.append("")
        out.append("ADVICE")
        for p in model_provenance(report.advice):
            out += wrap(f"model {p['label']}: {p['note']}", "  ", "    ")
        for g in groups:
            files = f" ({g['files']} files)" if g["files"] > 1 else ""
            # one row's message states its own prediction; a group's line adds the median over it
            speed = (
                f", median predicted {num(g['predicted_speedup'])}x"
                + (" (slower)" if g["predicted_speedup"] < 1 else "")
                if g.get("predicted_speedup") is not None and g["files"] > 1
                else ""
            )
            out += wrap(f"[{g['kind']}]{files}{speed}: {g.get('message') or ''}", "  ", "    ")
    plan = plan_groups(report.plan)
    if plan:
        out.append("")
        out.append(f"PLACEMENT PLAN ({', '.join(report.plan_models)})")
        for p in report.plan_provenance:
            out += wrap(f"model {p['label']}: {p['note']}", "  ", "    ")
        for g in plan:
            best = g["predicted_tier"] or g["best_bw_tier"] or "-"
            out += wrap(
                f"{g['files']} file(s) on {g['tier']}: best tier {best}"
                + (f", speed-up {num(g['speedup'])}x" if g["speedup"] is not None else ""),
                "  ",
                "    ",
            )
    for n in report.notes:
        out += wrap(f"note: {n}", "", "  ")
    return "\n".join(out) + "\n"


def output_path(out: str | None, log_id: str) -> Path:
    """`--out`: a file, or a folder (existing, or ending in /) to hold `<log_id>.html`."""
    if not out:
        return Path("reports") / f"{log_id}.html"
    p = Path(out)
    if out.endswith(("/", os.sep)) or p.is_dir():
        return p / f"{log_id}.html"
    return p


def write_report(conf, job: str, out: str | None = None) -> Path:
    """Resolve JOB in the lake of `conf`, render its page, write it; returns the path."""
    preload()  # matplotlib loads while the lake is read
    reader = LakeReader(conf)
    log_id = find_job(reader, job)
    html = render(build(reader, log_id))
    path = output_path(out, log_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path


def main(conf, job: str, out: str | None = None, format: str = "html") -> int:
    """`iolake report JOB [--format html|text|json] [--out ...]`: html writes the page (default
    reports/<log_id>.html); text and json print to stdout, or write to --out when given."""
    if format not in FORMATS:
        print(f"iolake report: --format must be one of {', '.join(FORMATS)}", file=sys.stderr)
        return 2
    try:
        if format == "html":
            path = write_report(conf, job, out)
        else:
            reader = LakeReader(conf)
            report = build(reader, find_job(reader, job), draw=False)
            if format == "json":
                import json

                body = json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n"
            else:
                body = to_text(report, colour=out is None and sys.stdout.isatty())
            if out is None:
                sys.stdout.write(body)
                return 0
            path = Path(out)
            if out.endswith(("/", os.sep)) or path.is_dir():
                path = path / f"{report.log_id}.{'json' if format == 'json' else 'txt'}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
    except JobNotFound as e:
        print(f"iolake report: {e}", file=sys.stderr)
        return 2
    print(f"iolake report: wrote {path}", file=sys.stderr if format != "html" else sys.stdout)
    return 0


__all__ = [
    "JobNotFound",
    "advice_groups",
    "model_provenance",
    "plan_groups",
    "to_json",
    "to_text",
    "LakeReader",
    "Report",
    "build",
    "find_job",
    "main",
    "render",
    "resolve_job",
    "write_report",
]
