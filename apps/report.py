"""`iolake report JOB`: one self-contained HTML page per job, built from the lake.

JOB names one decoded log: its `log_id` (the content hash), any prefix of it, or the job's
scheduler `jobid` (exact, digits only). A query that matches several logs (a short prefix, a
jobid traced twice) is refused with the candidates listed; one that matches nothing says so, and
says why when the ledger holds the log as quarantined. `resolve_job` holds that rule.

The page has: a summary (exe, nprocs, start, run time, bytes read / written, I/O time of the
slowest process, throughput, files, modules, Darshan metadata), the bottleneck tags with their
metric, threshold and evidence, the covering set (members, intervals, shares), a timeline PNG
(`IOFrame.timeline`, covering-set members outlined) embedded as a base64 `data:` URI, and the
placement plan (gold/placement_predictions and gold/bandwidth_predictions of the newest model
version of each model) or "no predictions yet". Nothing is loaded from elsewhere: no script,
no font, no stylesheet, no image outside the page.

Every string that comes from a trace (file names, exe, metadata, evidence, messages) is
user-controlled: the page is rendered by a Jinja2 template with autoescape on and no `|safe`,
so each one reaches the page HTML-escaped.

Reads: bronze/logs, jobs, files, io_ops, posix, mpiio, stdio; silver/job_features,
bottleneck_tags, covering_sets; gold/placement_predictions, bandwidth_predictions — each only if
present, through delta-rs (`iolake.lake.arrow`): no Spark, no JVM, local folder or URI alike.
Writes the one HTML file.
"""
from __future__ import annotations

import base64
import datetime as dt
import math
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from iolake.lake import arrow
from schemas import TABLES

JOB_COLUMNS = ["log_id", "jobid", "exe", "nprocs", "start_time_sec"]
SEVERITY_ORDER = {"high": 0, "warn": 1, "info": 2}
MAX_CANDIDATES = 10


class JobNotFound(LookupError):
    """JOB matched no decoded log of the lake, or more than one."""


# ---- reading the lake -----------------------------------------------------------------------
class LakeReader:
    """Tables of one lake as Arrow, through delta-rs (`iolake.lake.arrow`)."""

    def __init__(self, conf, storage_options: dict | None = None):
        self.lake = arrow.root(conf.lake)
        self.storage_options = storage_options
        self._exists: dict[str, bool] = {}

    def exists(self, name: str) -> bool:
        if name not in self._exists:
            self._exists[name] = arrow.exists(self.lake, TABLES[name], self.storage_options)
        return self._exists[name]

    def read(self, name: str, columns: list[str] | None = None, log_id: str | None = None,
             filter=None) -> pa.Table | None:
        """The table's rows (of `log_id` when given, matching `filter`), or None when the lake has
        no such table."""
        if not self.exists(name):
            return None
        if log_id is not None:
            by_log = pc.field("log_id") == log_id
            filter = by_log if filter is None else filter & by_log
        return arrow.read(self.lake, TABLES[name], columns=columns, filter=filter,
                          storage_options=self.storage_options)

    def ioframe(self, log_id: str):
        from apps.analysis import IOFrame

        return IOFrame.from_lake(self.lake, log_id=log_id, storage_options=self.storage_options)


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
    hits = [j for j in jobs if j["log_id"].startswith(q) or (q.isdigit() and j.get("jobid") == int(q))]
    if len(hits) == 1:
        return hits[0]["log_id"]
    if len(hits) > 1:
        hits.sort(key=lambda j: (j.get("start_time_sec") or 0, j["log_id"]))
        lines = [f"  {j['log_id']}  jobid {j.get('jobid')}  {j.get('nprocs')} procs  "
                 f"{_when(j.get('start_time_sec'))}  {j.get('exe') or ''}" for j in hits[:MAX_CANDIDATES]]
        more = f"\n  … and {len(hits) - MAX_CANDIDATES} more" if len(hits) > MAX_CANDIDATES else ""
        raise JobNotFound(f"{query!r} is ambiguous: {len(hits)} logs match; give a longer log_id prefix:\n"
                          + "\n".join(lines) + more)
    for log in ledger:
        if log["log_id"].startswith(q) and log.get("status") == "quarantined":
            raise JobNotFound(f"log {log['log_id']} ({log.get('source_uri')}) was quarantined: "
                              f"{log.get('reason') or 'no reason recorded'}; it has no job to report")
    raise JobNotFound(f"no job matches {query!r} (a log_id, a prefix of one, or a jobid)")


def find_job(reader: LakeReader, query: str) -> str:
    q = query.strip().lower()
    if not q:
        return resolve_job([], query)  # raises: JOB is empty
    if not reader.exists("jobs"):
        raise JobNotFound(f"the lake {reader.lake} has no bronze/jobs table (nothing ingested yet?)")
    expr = pc.starts_with(pc.field("log_id"), q)
    if q.isdigit():
        expr = expr | (pc.field("jobid") == int(q))
    jobs = _rows(reader.read("jobs", JOB_COLUMNS, filter=expr))
    ledger = []
    if not jobs:
        ledger = _rows(reader.read("logs", ["log_id", "status", "reason", "source_uri"],
                                   filter=pc.starts_with(pc.field("log_id"), q)))
    return resolve_job(jobs, query, ledger)


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
    notes: list[str] = field(default_factory=list)


def _when(sec) -> str:
    if sec is None:
        return "?"
    return dt.datetime.fromtimestamp(int(sec), dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def human_bytes(n) -> str:
    if n is None:
        return "—"
    n = float(n)
    for unit, size in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit} ({int(n):,} bytes)"
    return f"{int(n):,} bytes"


def secs(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    x = float(x)
    if x >= 3600:
        return f"{x:,.1f} s ({x / 3600:.2f} h)"
    return f"{x:.3g} s" if x < 10 else f"{x:,.1f} s"


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


def build(reader: LakeReader, log_id: str) -> Report:
    notes: list[str] = []
    (job,) = _rows(reader.read("jobs", log_id=log_id))[:1] or [None]
    if job is None:
        raise JobNotFound(f"log {log_id} has no row in bronze/jobs")
    (ledger,) = _rows(reader.read("logs", log_id=log_id))[:1] or [{}]
    (feat,) = _rows(reader.read("job_features", log_id=log_id))[:1] or [None]
    files = reader.read("files", ["record_id", "name"], log_id=log_id)
    names = dict(zip(files["record_id"].to_pylist(), files["name"].to_pylist())) if files is not None else {}

    exe = job.get("exe") or ""
    program = (feat or {}).get("program") or (exe.split()[0].rsplit("/", 1)[-1] if exe.strip() else "")
    title = f"job {job.get('jobid')}" + (f" · {program}" if program else "") + f" · log {log_id[:12]}"
    f = feat or {}
    summary = [
        ("log_id", log_id),
        ("jobid", str(job.get("jobid"))),
        ("uid", str(job.get("uid"))),
        ("executable", exe or "—"),
        ("processes", num(job.get("nprocs"))),
        ("start", _when(job.get("start_time_sec"))),
        ("end", _when(job.get("end_time_sec"))),
        ("run time", secs(job.get("run_time_s"))),
    ]
    if feat:
        summary += [
            ("bytes read", human_bytes(f.get("bytes_read"))),
            ("bytes written", human_bytes(f.get("bytes_written"))),
            ("read / write / metadata time", " / ".join(secs(f.get(k)) for k in ("read_time_s", "write_time_s",
                                                                                   "meta_time_s"))),
            ("I/O time (slowest process)", secs(f.get("io_time_s"))),
            ("bandwidth", f"{num(f.get('throughput_mib_s'))} MiB/s" if f.get("throughput_mib_s") is not None
             else "—"),
            ("files with I/O (shared)", f"{num(f.get('file_count'))} ({num(f.get('shared_file_count'))} shared)"),
            ("requests read / write", f"{num(f.get('read_requests'))} / {num(f.get('write_requests'))}"),
            ("metadata time share", "—" if f.get("meta_time_share") is None
             else f"{100 * f['meta_time_share']:.2f} %"),
            ("slowest / fastest rank time", f"{secs(f.get('slowest_rank_time_s'))} / "
                                            f"{secs(f.get('fastest_rank_time_s'))}"),
            ("interfaces", ", ".join(f.get("interfaces") or []) or "—"),
            ("tiers", ", ".join(f.get("tiers") or []) or "—"),
        ]
    else:
        notes.append("silver/job_features has no row for this log yet: run the features stage for bytes, "
                     "I/O time and bandwidth")
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
        tags = sorted(_rows(tag_rows), key=lambda r: (SEVERITY_ORDER.get(r["severity"], 9), r["tag"]))
    elif tag_rows is not None or reader.exists("job_features"):
        notes.append("no bottleneck tags for this log yet: run the tags stage")

    covering = None
    cover_rows = _rows(reader.read("covering_sets", log_id=log_id))
    if cover_rows:
        cover_rows.sort(key=lambda r: (r["start_s"], r["rank"]))
        for r in cover_rows:
            r["file_name"] = names.get(r["record_id"], f"<record {r['record_id']}>")
        first = cover_rows[0]
        covering = {"members": cover_rows, "cover_size": first["cover_size"], "n_intervals": first["n_intervals"],
                    "pure_io_time_s": first["pure_io_time_s"]}

    png, note = None, ""
    try:
        frame = reader.ioframe(log_id)
        if len(frame.ops) or len(frame.covering):
            with tempfile.TemporaryDirectory() as tmp:
                path = frame.timeline(os.path.join(tmp, "timeline.png"), title=f"job {job.get('jobid')} · "
                                                                                f"log {log_id[:12]}")
                png = Path(path).read_bytes()
            if not len(frame.ops):
                note = ("The trace holds no timed operations (no DXT or Recorder data): the timeline shows "
                        "the covering-set members, whose intervals come from Darshan's counters.")
        else:
            note = "Nothing to draw: the trace holds no timed operations and the log has no covering set."
    except Exception as e:  # a report without its picture beats no report
        note = f"The timeline could not be drawn: {type(e).__name__}: {e}"

    plan, models = None, []
    place = _rows(reader.read("placement_predictions", log_id=log_id))
    bw = _rows(reader.read("bandwidth_predictions", log_id=log_id))
    if place or bw:
        place, bw = _latest(place), _latest(bw)
        by_file: dict[int, dict] = {}
        for r in place:
            by_file.setdefault(r["record_id"], {"file_name": r["file_name"], "tier": r["tier"]}).update(
                predicted_tier=r["predicted_tier"], probability=r["probability"])
        for r in bw:
            by_file.setdefault(r["record_id"], {"file_name": r["file_name"], "tier": r["tier"]}).update(
                bandwidth_mib_s=r["bandwidth_mib_s"], predicted_bandwidth_mib_s=r["predicted_bandwidth_mib_s"])
        plan = sorted(by_file.values(), key=lambda r: (r.get("file_name") or ""))
        for r in plan:
            r["move"] = r.get("predicted_tier") is not None and r["predicted_tier"] != r.get("tier")
        models = sorted({f"{r['model_name']} v{r['model_version']}" for r in [*place, *bw]})
    return Report(log_id=log_id, title=title, summary=summary, metadata=metadata, tags=tags, covering=covering,
                  timeline_png=png, timeline_note=note, plan=plan, plan_models=models, notes=notes)


# ---- the page ------------------------------------------------------------------------------
TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="iolake report">
<title>iolake report: {{ r.title }}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 75em; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; width: 100%; margin: .5em 0; }
th, td { text-align: left; vertical-align: top; padding: .25em .6em; border-bottom: 1px solid #eee; }
th { background: #f4f4f4; } td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.kv th { width: 16em; background: none; font-weight: 600; }
.path { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
.sev { font-weight: 700; padding: .05em .45em; border-radius: .3em; color: #fff; }
.sev-high { background: #c0392b; } .sev-warn { background: #d68910; } .sev-info { background: #5d6d7e; }
ul.evidence { margin: .2em 0; padding-left: 1.2em; }
table.tags { table-layout: fixed; } table.tags td { overflow-wrap: anywhere; }
.note { color: #666; font-style: italic; }
img.timeline { max-width: 100%; border: 1px solid #ddd; }
tr.move td { background: #fef5e7; }
</style>
</head>
<body>
<h1 id="title">{{ r.title }}</h1>
<p class="path">log {{ r.log_id }}</p>
{% for n in r.notes %}<p class="note">{{ n }}</p>
{% endfor %}
<h2 id="summary">Summary</h2>
<table class="kv">
{% for k, v in r.summary %}<tr><th>{{ k }}</th><td{% if k in ("executable", "source", "log_id") %} class="path"{% endif %}>{{ v }}</td></tr>
{% endfor %}</table>
{% if r.metadata %}<h3>Darshan metadata</h3>
<table class="kv">
{% for k, v in r.metadata %}<tr><th>{{ k }}</th><td class="path">{{ v }}</td></tr>
{% endfor %}</table>
{% endif %}
<h2 id="tags">Bottleneck tags</h2>
{% if r.tags %}<table class="tags">
<colgroup><col style="width:5em"><col style="width:11em"><col style="width:32%"><col></colgroup>
<tr><th>severity</th><th>tag</th><th>finding (metric, threshold)</th><th>evidence</th></tr>
{% for t in r.tags %}<tr class="tag" data-tag="{{ t.tag }}">
<td><span class="sev sev-{{ t.severity }}">{{ t.severity }}</span></td>
<td><code>{{ t.tag }}</code></td>
<td>{{ t.message }}<br><small>{{ t.metric }} = {{ t.value | num }}{% if t.threshold_name %}; {{ t.threshold_name }} = {{ t.threshold | num }}{% endif %}</small></td>
<td>{% if t.evidence %}<ul class="evidence">{% for e in t.evidence %}<li class="path">{{ e }}</li>{% endfor %}</ul>{% else %}—{% endif %}</td>
</tr>
{% endfor %}</table>
{% else %}<p class="note">No bottleneck tags for this job yet (the tags stage has not run on it).</p>
{% endif %}
<h2 id="covering">Covering set</h2>
{% if r.covering %}<p>{{ r.covering.cover_size }} of the job's {{ r.covering.n_intervals }} (rank, file) I/O intervals cover
its pure I/O time of {{ r.covering.pure_io_time_s | secs }}: the minimum covering set.</p>
<table class="covering">
<tr><th>rank</th><th>file</th><th>start</th><th>end</th><th>length</th><th>share of pure I/O time</th><th>interval from</th></tr>
{% for m in r.covering.members %}<tr class="member">
<td class="n">{% if m.rank == -1 %}all{% else %}{{ m.rank }}{% endif %}</td><td class="path">{{ m.file_name }}</td>
<td class="n">{{ m.start_s | secs }}</td><td class="n">{{ m.end_s | secs }}</td><td class="n">{{ (m.end_s - m.start_s) | secs }}</td>
<td class="n">{{ m.share_s | secs }}</td><td>{{ m.interval_source }}</td></tr>
{% endfor %}</table>
{% else %}<p class="note">No covering set for this job (the covering stage has not run on it, or it has no timed read or write).</p>
{% endif %}
<h2 id="timeline">Timeline</h2>
{% if r.timeline_png %}<img class="timeline" id="timeline-img" alt="timeline of {{ r.title }}: ranks by time, covering-set members outlined in red" src="data:image/png;base64,{{ timeline_b64 }}">
{% endif %}{% if r.timeline_note %}<p class="note">{{ r.timeline_note }}</p>{% endif %}
<h2 id="placement">Placement plan</h2>
{% if r.plan %}<p>Predictions of {{ r.plan_models | join(", ") }}: {{ r.plan | selectattr("move") | list | length }} of
{{ r.plan | length }} files would run faster on another tier.</p>
<table class="plan">
<tr><th>file</th><th>tier now</th><th>predicted best tier</th><th>probability</th><th>measured MiB/s</th><th>predicted MiB/s (tier now)</th></tr>
{% for p in r.plan %}<tr class="file{% if p.move %} move{% endif %}">
<td class="path">{{ p.file_name }}</td><td>{{ p.tier }}</td><td>{{ p.predicted_tier or "—" }}</td>
<td class="n">{{ p.probability | num }}</td><td class="n">{{ p.bandwidth_mib_s | num }}</td><td class="n">{{ p.predicted_bandwidth_mib_s | num }}</td></tr>
{% endfor %}</table>
{% else %}<p class="note" id="no-predictions">No predictions yet for this job: the gold tables hold no
placement or bandwidth prediction for its files (train models on traces from two tiers, then run the score stage).</p>
{% endif %}
<p class="note">Generated by iolake report at {{ generated }}.</p>
</body>
</html>
"""


def render(report: Report) -> str:
    from jinja2 import Environment, StrictUndefined

    env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=False)
    env.filters.update(num=num, secs=secs)
    b64 = base64.b64encode(report.timeline_png).decode("ascii") if report.timeline_png else ""
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return env.from_string(TEMPLATE).render(r=report, timeline_b64=b64, generated=now)


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
    reader = LakeReader(conf)
    log_id = find_job(reader, job)
    html = render(build(reader, log_id))
    path = output_path(out, log_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path


def main(conf, job: str, out: str | None = None) -> int:
    try:
        path = write_report(conf, job, out)
    except JobNotFound as e:
        print(f"iolake report: {e}", file=sys.stderr)
        return 2
    print(f"iolake report: wrote {path}")
    return 0


__all__ = ["JobNotFound", "LakeReader", "Report", "build", "find_job", "main", "render", "resolve_job",
           "write_report"]
