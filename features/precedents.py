"""Precedents: what other runs of the same application did differently, and how fast they were.

Issue 40 ("Precedents"): the lake holds natural experiments — the same application run with
another transfer size, tier, interface, collective setting, layout or stripe count. For an advice
row of gold/tuning_advice this module finds those runs and measures them against the job's own
comparable runs, so advice can say "predicted 2.10x; measured 1.80x over 14 runs of this
application with 4 MiB transfers". No paper defines such a precedent; the definitions below are
this project's, chosen so that a ratio compares runs that differ in the advised setting and as
little else as the lake's features can tell.

**A run's setting** (`SETTING`), per job: the settings of its *busiest data file* (the data file,
`features.placement_labels.data_files`, moving the most bytes read + written; ties to the smaller
`record_id`), from silver/file_features:

- `tier`            the file's tier (conf `features.tier_rules`);
- `transfer_class`  its dominant transfer size rounded down to a power of 4 bytes (1 KiB, 4 KiB,
                    16 KiB, ... 4 MiB: the what-if's size ladder, conf `advise.transfer_sizes`), so
                    runs whose dominant sizes differ by a few bytes count as one size;
- `api`             POSIX | MPI-IO | MPI-IO collective (the interface and the collective flag:
                    `features.what_if.api_of`);
- `file_layout`     file per process | shared file (`features.what_if.layout_of`);
- `stripe_count`    the job's Lustre stripe count (silver/job_features; null off Lustre).

**The application** is the watch's key (gold/app_runs, conf `watch.key_parts`: by default the
executable, user, process-count bucket, file system, I/O direction and layout), *without the key
parts a move in the advised dimension changes*: a tier move changes the file system (`fs`), a
file-layout move the `layout` part (shared | fpp); the other dimensions leave the key as it is (`KEY_PART_OF`).

For a job J and the advised dimensions D (a what-if row: the dimensions its advised setting
changes; a tag row: the dimension of the what-if that addresses the tag, `advice.TAG_DIMENSION`;
a stripe row: `stripe_count`):

- a **precedent** is a run P != J of J's application whose setting differs from J's in every
  dimension of D (both values known) and equals J's in every other dimension of `SETTING`
  (null-safe: two nulls are equal), with a measured throughput;
- J's **comparable runs** are the runs of J's application whose setting equals J's in every
  dimension (J itself among them when its throughput is measured); their median throughput is
  the baseline b;
- each precedent's ratio is r_P = throughput(P) / b (throughput: gold/app_runs.bandwidth_mib_s,
  bytes over the slowest process's I/O time; suspect logs, silver/job_features.suspect, have
  none and count nowhere);
- precedents are grouped by their values in D; the group reported is the one with the advised
  values (a what-if or stripe row) when the lake holds it, else the one with the highest median
  ratio (more runs first on a tie);
- `precedent_speedup` = median of that group's r_P, `precedent_runs` = its number of runs,
  `precedent_low` / `precedent_high` = the smallest and largest r_P (the min–max spread: IQR
  needs more runs than most applications have), `precedent_setting` its values in D in words.

Why so: the watch's key already says what "the same application" is in this project; the
parts dropped are exactly those the move cannot keep; equality in every other dimension is the
simplest "resembles it otherwise" the features support; a median over runs and over the
baseline keeps one odd run from deciding. Limits: the lake's runs are not a controlled
experiment (another week's file-system load, another input deck of the same executable); the
job-level setting is its busiest file's, so a what-if on another file of the job is compared on
the busiest file's setting; one precedent run is reported as such (n = 1), never hidden.

Cost: the advise stage reads the precedent history only for the applications of the jobs it
advises (`history_for`: gold/app_runs rows sharing the key parts every dimension keeps), then
matches in pandas on the driver (`precedents`), and sends the matches back in slices
(`iolake.spark.local_frame`, decision 0040). On the driver a job's candidate runs are looked up
by key (`_Buckets`), and each bucket is read once per dimensions into its runs' sorted
throughputs per setting (`_Groups`): an answer costs the bucket's settings, not its runs.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

SETTING = ("tier", "transfer_class", "api", "file_layout", "stripe_count")
# the watch key's part a move in the dimension changes
KEY_PART_OF = {"tier": "fs", "file_layout": "layout"}
ADVICE_DIMENSION = {  # the what-if's (and a tag's) dimension names -> SETTING
    "tier": "tier",
    "transfer_size": "transfer_class",
    "api": "api",
    "layout": "file_layout",
    "stripe_count": "stripe_count",
}
OUT_COLUMNS = (
    "precedent_speedup",
    "precedent_runs",
    "precedent_low",
    "precedent_high",
    "precedent_setting",
)


def transfer_class(size) -> int | None:
    """`size` (bytes) rounded down to a power of 4 bytes; None when not positive."""
    if size is None or (isinstance(size, float) and math.isnan(size)) or size <= 0:
        return None
    return int(4 ** math.floor(math.log(float(size), 4) + 1e-9))


def _size_text(n) -> str:
    from features.what_if import human_size

    return human_size(int(n))


def describe(dim: str, value) -> str:
    """A setting value in words, as the advice message shows it."""
    if dim == "transfer_class":
        return f"{_size_text(value)} transfers"
    if dim == "tier":
        return f"tier {value}"
    if dim == "file_layout":
        return "a file per process" if value == "file per process" else "a shared file"
    if dim == "stripe_count":
        return f"stripe count {int(value)}"
    return str(value)


SETTING_TEXT = (
    r"^(?P<api>.*), (?P<layout>file per process|shared file), "
    r"(?P<size>\d+) (?P<unit>B|KiB|MiB) transfers, on (?P<tier>\S+)$"
)
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20}


def parse_setting(text) -> dict | None:
    """The what-if's `current` / `advised` text (`features.what_if.describe`) back as SETTING values
    (tier, transfer_class, api, file_layout); None when it does not read as one."""
    import re

    if not isinstance(text, str):
        return None
    m = re.match(SETTING_TEXT, text)
    if m is None:
        return None
    return {
        "tier": m["tier"],
        "transfer_class": transfer_class(int(m["size"]) * UNITS[m["unit"]]),
        "api": m["api"],
        "file_layout": m["layout"],
    }


def parse_stripe(text) -> dict | None:
    """A stripe row's `current` / `advised` text ("stripe count 4, stripe size 1M") as {stripe_count}."""
    import re

    m = re.match(r"^stripe count (\d+)", text) if isinstance(text, str) else None
    return {"stripe_count": int(m.group(1))} if m else None


def ask(kind: str, item, current, advised, tag_dimension: dict) -> tuple[tuple, dict | None] | None:
    """(dimensions D, advised values or None) of an advice row, None when no precedent applies:
    a what-if row's changed dimensions and its advised values; a stripe row's stripe count; a tag
    row's dimension of `tag_dimension` (`features.advice.TAG_DIMENSION`) with no advised value."""
    if kind == "what_if":
        now, to = parse_setting(current), parse_setting(advised)
        if now is None or to is None:
            return None
        dims = tuple(d for d in SETTING if d in to and to[d] != now[d])
        return (dims, {d: to[d] for d in dims}) if dims else None
    if kind == "stripe":
        now, to = parse_stripe(current), parse_stripe(advised)
        if to is None or (now is not None and now == to):
            return None
        return ("stripe_count",), to
    if kind == "tag" and item in tag_dimension:
        return (ADVICE_DIMENSION[tag_dimension[item]],), None
    return None


def _null(a) -> bool:
    return a is None or a is pd.NA or (isinstance(a, float) and math.isnan(a))


def _same(a, b) -> bool:
    """Null-safe equality of two setting or key values."""
    if _null(a) or _null(b):
        return _null(a) and _null(b)
    return a == b


def _measured(r: dict) -> bool:
    t = r["throughput"]
    return not _null(t) and bool(np.isfinite(t)) and t > 0


def one(mine: list[dict], j: dict, dims: tuple, target: dict | None, key_parts) -> dict:
    """The precedent of job `j` (a run's record: `log_id`, the key parts, SETTING, `throughput`) for
    dimensions `dims` (SETTING names) among the records `mine` (at least every run sharing j's key
    parts but `fs` and `layout`); `target`: the advised values, or None. Returns OUT_COLUMNS (all
    None when there is no precedent), `baseline_runs` and `baseline` (MiB/s)."""
    none = dict.fromkeys((*OUT_COLUMNS, "baseline_runs", "baseline"))
    if not dims or not all(not _null(j[d]) for d in dims):
        return none
    drop = {KEY_PART_OF[d] for d in dims if d in KEY_PART_OF}
    app = [p for p in key_parts if p not in drop]
    same_app = [r for r in mine if _measured(r) and all(_same(r[p], j[p]) for p in app)]
    comparable = [r["throughput"] for r in same_app if all(_same(r[d], j[d]) for d in SETTING)]
    if not comparable:
        return none
    base = float(np.median(comparable))
    others = [d for d in SETTING if d not in dims]
    groups: dict[tuple, list[float]] = {}
    for r in same_app:
        if r["log_id"] == j["log_id"]:
            continue
        if all(not _null(r[d]) and r[d] != j[d] for d in dims) and all(
            _same(r[d], j[d]) for d in others
        ):
            groups.setdefault(tuple(r[d] for d in dims), []).append(r["throughput"] / base)
    if not groups:
        return none
    want = tuple(target[d] for d in dims) if target else None
    if want is not None and want in groups:
        pick = want
    else:
        pick = max(groups, key=lambda k: (float(np.median(groups[k])), len(groups[k]), str(k)))
    ratios = groups[pick]
    return {
        "precedent_speedup": float(np.median(ratios)),
        "precedent_runs": len(ratios),
        "precedent_low": float(min(ratios)),
        "precedent_high": float(max(ratios)),
        "precedent_setting": ", ".join(describe(d, v) for d, v in zip(dims, pick)),
        "baseline_runs": len(comparable),
        "baseline": base,
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


_NO_RUNS: list[dict] = []  # the one empty bucket: `precedents` keys its memo on a bucket's id


class _Buckets:
    """The runs `one` can use for a job and dimensions, found by look-up instead of a scan of the
    application's runs: those sharing the job's key parts (less the parts the dimensions move)
    and its values of every other SETTING dimension. `one` reads nothing else (its comparable runs
    and its precedents both share them), so it returns the same on a bucket as on every run, and
    a night's asks cost their buckets, not the lake's runs of their applications. Values are
    compared as `_same` does: nulls were made None, and None equals None in a key."""

    def __init__(self, recs: list[dict], key_parts):
        self.recs, self.key_parts = recs, list(key_parts)
        self.index: dict[tuple, dict[tuple, list[dict]]] = {}

    def of(self, j: dict, dims: tuple) -> list[dict]:
        drop = {KEY_PART_OF[d] for d in dims if d in KEY_PART_OF}
        app = tuple(p for p in self.key_parts if p not in drop)
        others = tuple(d for d in SETTING if d not in dims)
        ix = self.index.get((app, others))
        if ix is None:
            ix = self.index[(app, others)] = {}
            for r in self.recs:
                key = (tuple(r[p] for p in app), tuple(r[d] for d in others))
                ix.setdefault(key, []).append(r)
        return ix.get((tuple(j[p] for p in app), tuple(j[d] for d in others)), _NO_RUNS)


def _median(ordered: list[float], scale: float = 1.0) -> float:
    """np.median of [x / scale for x in ordered] (`ordered` sorted, scale > 0), from its middle
    values only: dividing by a positive number keeps the order, so the middle of the quotients is
    the quotient of the middle, and np.median of the middle is np.median of the whole, bit for bit."""
    m = len(ordered)
    mid = ordered[(m - 1) // 2 : m // 2 + 1]
    return float(np.median([x / scale for x in mid]))


class _Groups:
    """`one` on a bucket (`_Buckets.of`), the bucket read once per dimensions: its measured runs'
    throughputs by their values in those dimensions, sorted. Every run of a bucket shares the job's
    key parts and its other dimensions, so `one`'s comparable runs are the group of the job's own
    values and its precedents' groups are those differing from them in every dimension: per job
    the cost is the bucket's number of groups, not its runs. Equal to `one` on the same runs, bit
    for bit (`_median`)."""

    def __init__(self):
        self.groups: dict[tuple, dict[tuple, list[float]]] = {}

    def of(self, bucket: list[dict], dims: tuple) -> dict[tuple, list[float]]:
        k = (id(bucket), dims)
        if k not in self.groups:
            g: dict[tuple, list[float]] = {}
            for r in bucket:
                if _measured(r):
                    g.setdefault(tuple(r[d] for d in dims), []).append(r["throughput"])
            for v in g.values():
                v.sort()
            self.groups[k] = g
        return self.groups[k]

    def one(self, bucket: list[dict], j: dict, dims: tuple, target: dict | None) -> dict:
        none = dict.fromkeys((*OUT_COLUMNS, "baseline_runs", "baseline"))
        if not dims or not all(not _null(j[d]) for d in dims):
            return none
        groups = self.of(bucket, dims)
        mine = tuple(j[d] for d in dims)
        comparable = groups.get(mine)
        if not comparable:
            return none
        base = _median(comparable)
        found = {
            vals: ts
            for vals, ts in groups.items()
            if all(v is not None and v != w for v, w in zip(vals, mine))
        }
        if not found:
            return none
        medians = {vals: _median(ts, base) for vals, ts in found.items()}
        want = tuple(target[d] for d in dims) if target else None
        if want is not None and want in found:
            pick = want
        else:
            pick = max(found, key=lambda k: (medians[k], len(found[k]), str(k)))
        ts = found[pick]
        return {
            "precedent_speedup": medians[pick],
            "precedent_runs": len(ts),
            "precedent_low": float(ts[0] / base),
            "precedent_high": float(ts[-1] / base),
            "precedent_setting": ", ".join(describe(d, v) for d, v in zip(dims, pick)),
            "baseline_runs": len(comparable),
            "baseline": base,
        }


def precedents(
    runs: pd.DataFrame, asks: pd.DataFrame, key_parts, tag_dimension: dict
) -> pd.DataFrame:
    """Per advice row of `asks` (log_id, kind, item, current, advised), its precedent (`one`) among
    `runs` (one row per job: log_id, the key parts, SETTING, `throughput` in MiB/s, null when not
    measured), with `message_text` ("measured 1.80x over 14 runs of this application with 4 MiB
    transfers") and `fact` (the evidence line); rows without a precedent are left out."""
    cols = [
        "log_id",
        "kind",
        "item",
        *OUT_COLUMNS,
        "baseline_runs",
        "baseline",
        "message_text",
        "fact",
    ]
    recs = [{k: (None if _null(v) else v) for k, v in r.items()} for r in runs.to_dict("records")]
    by_id = {r["log_id"]: r for r in recs}
    candidates, grouped = _Buckets(recs, key_parts), _Groups()
    # Within a bucket, `one` depends on the job only through its values of the dimensions (its
    # own run never counts as a precedent: those differ from it there), so runs of one
    # application with one setting share the answer: computed once per bucket and values.
    memo: dict[tuple, dict] = {}
    out = []
    for a in asks.to_dict("records"):
        q = ask(a["kind"], a["item"], a.get("current"), a.get("advised"), tag_dimension)
        j = by_id.get(a["log_id"])
        if q is None or j is None:
            continue
        dims, target = q
        bucket = candidates.of(j, dims)
        key = (
            id(bucket),
            dims,
            tuple(j[d] for d in dims),
            tuple(target[d] for d in dims) if target else None,
        )
        if key not in memo:
            memo[key] = grouped.one(bucket, j, dims, target)
        p = dict(memo[key])
        if p["precedent_speedup"] is None:
            continue
        n, b = p["precedent_runs"], p["baseline_runs"]
        p["message_text"] = (
            f"measured {p['precedent_speedup']:.2f}x over {_plural(n, 'run')} of this "
            f"application with {p['precedent_setting']}"
        )
        p["fact"] = (
            f"precedent: {_plural(n, 'run')} of this application with {p['precedent_setting']} "
            f"ran at a median {p['precedent_speedup']:.2f}x (min {p['precedent_low']:.2f}x, max "
            f"{p['precedent_high']:.2f}x) the median throughput of this job's "
            f"{_plural(b, 'comparable run')} ({p['baseline']:.1f} MiB/s)"
        )
        out.append({"log_id": a["log_id"], "kind": a["kind"], "item": a["item"], **p})
    return pd.DataFrame(out, columns=cols)


# ---- Spark: the history of the advised jobs' applications -------------------------------------


def run_settings(file_features, job_features):
    """log_id -> SETTING (Spark): the busiest data file's tier, transfer class, API and layout, and
    the job's stripe count. `file_features`: silver/file_features; `job_features`: silver/job_features."""
    import pyspark.sql.functions as F

    from features.placement_labels import data_files

    moved = F.coalesce(F.col("bytes_read"), F.lit(0)) + F.coalesce(F.col("bytes_written"), F.lit(0))
    top = (
        data_files(file_features, need_bandwidth=False)
        .groupBy("log_id")
        .agg(
            F.max_by(
                F.struct("tier", "transfer_size", "interface", "collective", "file_per_process"),
                F.struct(moved.alias("b"), (-F.col("record_id")).alias("r")),
            ).alias("t")
        )
    )
    size = F.col("t.transfer_size")
    cls = F.when(size > 0, F.pow(F.lit(4.0), F.floor(F.log(4.0, size.cast("double")) + 1e-9))).cast(
        "long"
    )
    api = (
        F.when(F.col("t.interface") != "MPI-IO", F.lit("POSIX"))
        .when(F.col("t.collective"), F.lit("MPI-IO collective"))
        .otherwise(F.lit("MPI-IO"))
    )
    layout = F.when(F.col("t.file_per_process"), F.lit("file per process")).otherwise(
        F.lit("shared file")
    )
    return top.join(job_features.select("log_id", "stripe_count"), "log_id", "left").select(
        "log_id",
        F.col("t.tier").alias("tier"),
        cls.alias("transfer_class"),
        api.alias("api"),
        layout.alias("file_layout"),
        "stripe_count",
    )


def _base_key(key_parts):
    import pyspark.sql.functions as F

    keep = [p for p in key_parts if p not in KEY_PART_OF.values()]
    return F.concat_ws("|", *[F.coalesce(F.col(p).cast("string"), F.lit("-")) for p in keep])


def history_for(todo, app_runs, plausible_jobs, file_features, key_parts):
    """The runs of the applications of `todo`'s jobs (Spark; one row per job: log_id, the key parts,
    SETTING, `throughput`): gold/app_runs rows sharing a todo job's key parts that every dimension
    keeps (all but `fs` and `layout`), with their settings (`run_settings` over `file_features`) and
    their throughput when the job is in `plausible_jobs` (silver/job_features without suspect logs),
    null otherwise."""
    import pyspark.sql.functions as F

    base = _base_key(key_parts)
    runs = app_runs.withColumn("_base", base)
    apps = runs.join(todo.select("log_id"), "log_id", "left_semi").select("_base").distinct()
    mine = runs.join(F.broadcast(apps), "_base", "left_semi")
    ok = plausible_jobs.select("log_id", F.lit(True).alias("_ok"))
    settings = run_settings(
        file_features.join(mine.select("log_id"), "log_id", "left_semi"),
        plausible_jobs,
    )
    return (
        mine.join(ok, "log_id", "left")
        .join(settings, "log_id", "left")
        .select(
            "log_id",
            *[p for p in key_parts],
            *SETTING,
            F.when(F.col("_ok"), F.col("bandwidth_mib_s")).alias("throughput"),
        )
    )


def attach(rows, runs, key_parts, tag_dimension: dict):
    """`rows` (advice rows in gold/tuning_advice's columns, without the precedent columns) with the
    precedent columns, the measured figure in the message beside the predicted one and the
    precedent's fact in the evidence; `runs`: `history_for`, or None (every precedent column null)."""
    import pyspark.sql.functions as F
    from pyspark.sql import types as T

    from iolake.spark import local_frame

    spark = rows.sparkSession
    schema = T.StructType(
        [
            T.StructField("log_id", T.StringType()),
            T.StructField("kind", T.StringType()),
            T.StructField("item", T.StringType()),
            T.StructField("precedent_speedup", T.DoubleType()),
            T.StructField("precedent_runs", T.LongType()),
            T.StructField("precedent_low", T.DoubleType()),
            T.StructField("precedent_high", T.DoubleType()),
            T.StructField("precedent_setting", T.StringType()),
            T.StructField("message_text", T.StringType()),
            T.StructField("fact", T.StringType()),
        ]
    )
    found = pd.DataFrame(columns=schema.fieldNames())
    if runs is not None:
        asks = (
            rows.where(F.col("kind").isin("what_if", "stripe", "tag"))
            .select("log_id", "kind", "item", "current", "advised")
            .toPandas()
        )
        if not asks.empty:
            hist = runs.toPandas()
            found = precedents(hist, asks, list(key_parts), tag_dimension)
    recs = [
        tuple(
            None
            if (v is None or (isinstance(v, float) and math.isnan(v)))
            else (int(v) if c == "precedent_runs" else v)
            for c, v in zip(schema.fieldNames(), r)
        )
        for r in found[schema.fieldNames()].itertuples(index=False)
    ]
    p = local_frame(spark, recs, schema)
    out = rows.join(p, ["log_id", "kind", "item"], "left")
    msg, txt = F.col("message"), F.col("message_text")
    # a what-if's verdict "predicted 1.90x faster (a -> b MiB/s)": the measured figure right after it
    cut = F.instr(msg, "MiB/s)")
    head = F.expr("substring(message, 1, instr(message, 'MiB/s)') + 5)")
    tail = F.expr("substring(message, instr(message, 'MiB/s)') + 6)")
    # a tag's "(predicted 2.10x changing the transfer size alone)": inside its parenthesis
    inside = F.expr("substring(message, 1, length(message) - 1)")
    message = (
        F.when(txt.isNull(), msg)
        .when(msg.startswith("predicted ") & (cut > 0), F.concat(head, F.lit("; "), txt, tail))
        .when(
            (F.col("kind") == "tag") & msg.endswith(" alone)"),
            F.concat(inside, F.lit("; "), txt, F.lit(")")),
        )
        .when(F.col("kind") == "tag", F.concat(msg, F.lit(" ("), txt, F.lit(")")))
        .otherwise(F.concat(msg, F.lit("; "), txt))
    )
    evidence = F.when(F.col("fact").isNull(), F.col("evidence")).otherwise(
        F.concat("evidence", F.array("fact"))
    )
    return (
        out.withColumn("message", message)
        .withColumn("evidence", evidence)
        .drop("message_text", "fact")
    )
