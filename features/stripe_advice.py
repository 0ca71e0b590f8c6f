"""DCA-IO's Lustre stripe recommendation (Kim et al., "DCA-IO: A Dynamic I/O Control Scheme for
Parallel and Distributed File Systems", §IV), computed from the lake's jobs: pure pandas.

DCA-IO sets `lfs setstripe -c <count> -S <size>` before each execution of an application:
- initial execution, no run of the application known (§IV-A, Procedure 1): among the lake's jobs of
  other applications with exactly the same number of processes, the stripe count whose jobs have
  the highest mean I/O throughput; the stripe size is chosen the same way, independently.
- second execution, one run known (§IV-B, Procedure 2, rule phase): file-per-process -> 1 stripe,
  shared file -> as many stripes as processes doing I/O; stripe size 1 MiB.
- third and later executions (§IV-B, Procedure 2, heuristic phase): while throughput rises the
  stripe count grows (doubled by default, up to the OSTs available); once the count stops changing
  and throughput still rises, the stripe size doubles; otherwise the latest setting is kept.

`advise_runs` replays this over a lake: for every job, what DCA-IO would have set for it from what
was known before it started. Each advice carries `evidence`, the facts the decision used. A night's
jobs need not replay the lake: `Prior` holds what the replay knows before a time (each application's
run counts, first and last two usable runs, Procedure 1's sums), and `advise_runs(later, prior=...)`
gives the later jobs the advice the whole replay gives them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import pandas as pd

MIB = 1 << 20
LUSTRE_MAX_STRIPE_COUNT = (
    2000  # Lustre's LOV_MAX_STRIPE_COUNT: the cap when the OST count is not given
)
LUSTRE_MAX_STRIPE_SIZE = 1 << 32  # stripe sizes must stay below 4 GiB
GROWTHS = ("double", "linear")
SKIPPED_BEFORE = "skipped_before"  # advise_runs: earlier runs of the job's application left out
OUT_COLUMNS = [
    "log_id",
    "run_number",
    "phase",
    "current_count",
    "current_size",
    "stripe_count",
    "stripe_size",
    "evidence",
    "command",
]


def _check(growth: str) -> None:
    if growth not in GROWTHS:
        raise ValueError(f"growth must be one of {GROWTHS}, not {growth!r}")


def size_text(nbytes: int) -> str:
    """A stripe size as `lfs setstripe -S` takes it: 1M, 4M, 64K, 2G; plain bytes if not a multiple of 1K."""
    for unit, suffix in ((1 << 30, "G"), (MIB, "M"), (1 << 10, "K")):
        if nbytes and nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return str(nbytes)


def _num(x) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _procs(n) -> str:
    return f"{_num(n)} process" + "es" * (n != 1)


@dataclass(frozen=True)
class StripeAdvice:
    phase: str  # "initial" (Procedure 1) | "rule" | "heuristic" (Procedure 2)
    stripe_count: int
    stripe_size: int  # bytes
    evidence: tuple[str, ...]

    def command(self, path: str = "<dir>") -> str:
        return f"lfs setstripe -c {self.stripe_count} -S {size_text(self.stripe_size)} {path}"


# -- §IV-A, Procedure 1: initial execution ----------------------------------------------------------


def _best(stats: Mapping, flag: str, what: str, nprocs) -> tuple[int, list[str]]:
    """The value with the highest mean throughput (ties within 1e-9 relative: the smaller value)."""
    means = {v: s / n for v, (s, n) in stats.items()}
    top = max(means.values())
    tied = sorted(v for v, m in means.items() if math.isclose(m, top, rel_tol=1e-9))
    fmt = size_text if flag == "-S" else str
    parts = ", ".join(
        f"{means[v]:.1f} MiB/s at {flag} {fmt(v)} ({stats[v][1]} job{'s' * (stats[v][1] != 1)})"
        for v in sorted(means, key=lambda v: (-means[v], v))
    )
    jobs = sum(n for _, n in stats.values())
    ev = [f"{jobs} job{'s' * (jobs != 1)} with {_procs(nprocs)}: mean {parts}"]
    if len(tied) > 1:
        ev.append(
            f"tie at {top:.1f} MiB/s between {', '.join(f'{flag} {fmt(v)}' for v in tied)}: "
            f"the smaller {what} taken"
        )
    return tied[0], ev


def _from_stats(count_stats: Mapping, size_stats: Mapping, nprocs) -> StripeAdvice | None:
    if not count_stats:
        return None
    count, ev = _best(count_stats, "-c", "stripe count", nprocs)
    if size_stats:
        size, ev_size = _best(size_stats, "-S", "stripe size", nprocs)
    else:
        size, ev_size = (
            MIB,
            [f"no job with {_procs(nprocs)} recorded a stripe size: Lustre's 1M kept"],
        )
    return StripeAdvice("initial", int(count), int(size), tuple(ev + ev_size))


def _stats(values: pd.Series, tp: pd.Series) -> dict[int, tuple[float, int]]:
    ok = values.notna() & tp.notna()
    g = tp[ok].groupby(values[ok].astype("int64")).agg(["sum", "count"])
    return {int(v): (float(s), int(n)) for v, s, n in g.itertuples()}


def initial(history: pd.DataFrame, nprocs: int) -> StripeAdvice | None:
    """DCA-IO §IV-A, Procedure 1: the setting for an application's first execution.

    Among `history`'s jobs with exactly `nprocs` processes, the unique stripe counts, each with the
    mean throughput_mib_s of its jobs; the count with the highest mean wins. The stripe size is
    picked the same way, independently. The printed pseudo-code compares `tempThroughput >
    stripeCount` (a typo: a throughput against a stripe count); this follows the prose, "the
    stripe count of the highest average I/O throughput". Rows with a null stripe count (size) or
    throughput are ignored for that choice; ties go to the smaller count (size); with no size
    recorded the size stays 1 MiB. None when no job has `nprocs` processes, a count and a throughput.
    """
    h = history[history["nprocs"] == nprocs]
    tp = pd.to_numeric(h["throughput_mib_s"], errors="coerce")
    return _from_stats(_stats(h["stripe_count"], tp), _stats(h["stripe_size"], tp), nprocs)


# -- §IV-B, Procedure 2: recurring execution --------------------------------------------------------


def _cap(count: int, max_osts: int | None) -> tuple[int, list[str]]:
    limit = max_osts or LUSTRE_MAX_STRIPE_COUNT
    if count <= limit:
        return count, []
    return limit, [
        f"stripe count capped at {limit} "
        + ("OSTs" if max_osts else "(Lustre's stripe count limit)")
    ]


def rule_phase(shared: bool, io_procs: int, max_osts: int | None = None) -> StripeAdvice:
    """DCA-IO §IV-B, Procedure 2, rule phase (2nd execution): file-per-process -> stripe count 1;
    shared file -> stripe count = processes doing I/O (capped at `max_osts`); stripe size 1 MiB."""
    if shared:
        count = max(1, int(io_procs))
        ev = [
            f"previous run shared a file among {count} I/O processes: stripe count = I/O processes"
        ]
    else:
        count, ev = 1, ["previous run was file-per-process: stripe count 1"]
    count, ev_cap = _cap(count, max_osts)
    return StripeAdvice(
        "rule", count, MIB, tuple(ev + ev_cap + ["stripe size 1M: the rule phase's start"])
    )


def _setting(run: Mapping) -> str:
    size = run.get("stripe_size")
    return f"-c {_num(run['stripe_count'])} -S {'?' if pd.isna(size) else size_text(int(size))}"


def heuristic_phase(
    latest: Mapping,
    previous: Mapping,
    max_osts: int | None = None,
    growth: str = "double",
    step: int = 1,
) -> StripeAdvice:
    """DCA-IO §IV-B, Procedure 2, heuristic phase (3rd and later executions).

    If the latest run's throughput beat the previous run's, the stripe count grows from the latest
    count, capped at `max_osts` (maxAvailStripeCount; Lustre's 2000-stripe limit when not given):
    `growth="double"` doubles it as the pseudo-code does; `growth="linear"` adds `step` (the rule
    phase's starting count, at least 1), the prose's "increases the stripe count linearly".
    Otherwise the latest count is kept (also capped). The stripe size doubles only when the new count
    equals the latest count and throughput rose (the pseudo-code's `previousStripeSize *` is cut off;
    the prose grows the size "until the performance decreases": x2 is used, and a doubling that
    would reach Lustre's 4 GiB limit is not made); otherwise the latest size is kept.
    """
    _check(growth)
    lc, lt, pt = (
        int(latest["stripe_count"]),
        float(latest["throughput_mib_s"]),
        float(previous["throughput_mib_s"]),
    )
    rose = lt > pt
    ev = [
        f"previous run {pt:.1f} MiB/s at {_setting(previous)}, latest {lt:.1f} MiB/s at {_setting(latest)}: "
        f"throughput {'rose' if rose else 'did not rise'}"
    ]
    step = max(1, int(step))
    grown = (lc * 2 if growth == "double" else lc + step) if rose else lc
    how = "doubled" if growth == "double" else f"raised by {step}"
    ev.append(f"stripe count {how}: {lc} -> {grown}" if rose else f"stripe count kept at {lc}")
    count, ev_cap = _cap(grown, max_osts)
    ev += ev_cap
    ls = None if pd.isna(latest.get("stripe_size")) else int(latest["stripe_size"])
    if ls is None:
        size, why = MIB, "latest run's stripe size unknown: 1M"
    elif count == lc and rose and 2 * ls < LUSTRE_MAX_STRIPE_SIZE:
        size = 2 * ls
        why = f"stripe size doubled (count unchanged, throughput rose): {size_text(ls)} -> {size_text(size)}"
    else:
        size, why = (
            ls,
            f"stripe size kept at {size_text(ls)}: "
            + (
                "stripe count changed"
                if count != lc
                else "throughput did not rise"
                if not rose
                else "doubling would reach Lustre's 4G limit"
            ),
        )
    ev.append(why)
    return StripeAdvice("heuristic", count, size, tuple(ev))


def _rule_from(run: Mapping, nprocs, max_osts: int | None) -> StripeAdvice:
    shared, io, note = run.get("shared"), run.get("io_procs"), []
    if pd.isna(shared):
        shared, note = False, ["previous run's file sharing unknown: taken as file-per-process"]
    if shared and pd.isna(io):
        io = run.get("nprocs")
        io = nprocs if io is None or pd.isna(io) else io
        note.append(f"previous run's I/O process count unknown: its {_num(io)} processes taken")
    a = rule_phase(bool(shared), 1 if pd.isna(io) else int(io), max_osts)
    return replace(a, evidence=tuple(note) + a.evidence)


def _advise(
    runs: Sequence[Mapping],
    skipped: int,
    initial_fn: Callable[[], StripeAdvice | None],
    nprocs,
    max_osts: int | None,
    growth: str,
) -> StripeAdvice | None:
    """runs: the application's usable earlier runs, oldest first."""
    if not runs:
        a = initial_fn()
    elif len(runs) == 1:
        a = _rule_from(runs[0], nprocs, max_osts)
    else:
        step = _rule_from(runs[0], nprocs, max_osts).stripe_count
        a = heuristic_phase(runs[-1], runs[-2], max_osts, growth, step)
    if a is None or not skipped:
        return a
    return replace(
        a,
        evidence=a.evidence
        + (f"{skipped} earlier run{'s' * (skipped != 1)} skipped: no throughput or stripe count",),
    )


class _Runs:
    """An application's usable runs as the replay reads them: how many, the first (the rule phase's
    start) and the last two (the heuristic phase's comparison). Indexes 0, -1 and -2 only."""

    __slots__ = ("n", "first", "last")

    def __init__(self, n: int = 0, first=None, last=()):
        self.n, self.first, self.last = n, first, tuple(last)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        if i == 0:
            return self.first
        if i in (-1, -2) and -i <= len(self.last):
            return self.last[i]
        raise IndexError(i)

    def append(self, run) -> None:
        if not self.n:
            self.first = run
        self.last = (*self.last, run)[-2:]
        self.n += 1


#: Prior.cells: one row per application (the key's columns), nprocs, stripe count and stripe size of
#: the jobs before the cut, with `jobs` (rows), `tp_n` (rows with a throughput) and `tp_sum`.
CELL_COLUMNS = ["nprocs", "stripe_count", "stripe_size", "jobs", "tp_n", "tp_sum"]
#: What the replay reads of a run.
RECORD_COLUMNS = [
    "log_id",
    "nprocs",
    "stripe_count",
    "stripe_size",
    "throughput_mib_s",
    "shared",
    "io_procs",
]
#: Prior.runs: the first, previous and latest usable run of each application (`which`), as rows.
RUN_COLUMNS = ["which", *RECORD_COLUMNS]


@dataclass(frozen=True)
class Prior:
    """What `advise_runs` knows before the first job it replays: `cells` (CELL_COLUMNS after the key's
    columns) and `runs` (RUN_COLUMNS after the key's columns), from every job that started before
    the cut, jobs without a stripe value included (they are skipped runs). `history_prior` builds
    one from those jobs; features/advice.py builds it in Spark without gathering them."""

    cells: pd.DataFrame
    runs: pd.DataFrame


def history_prior(jobs: pd.DataFrame, key: Sequence[str] = ("program",)) -> Prior:
    """The `Prior` of the jobs in `jobs` (all of them before the cut), gathered in pandas."""
    key = list(key)
    df = jobs.sort_values(["start_time", "log_id"], kind="stable", na_position="last")
    tp = pd.to_numeric(df["throughput_mib_s"], errors="coerce")
    cells = (
        df.assign(_tp=tp, _n=tp.notna().astype("int64"), _one=1)
        .groupby([*key, "nprocs", "stripe_count", "stripe_size"], dropna=False, sort=False)
        .agg(jobs=("_one", "sum"), tp_n=("_n", "sum"), tp_sum=("_tp", "sum"))
        .reset_index()
    )
    usable = df[tp.notna() & df["stripe_count"].notna()]
    g = usable.groupby(key, dropna=False, sort=False)
    picks = [
        p
        for p in (
            g.head(1).assign(which="first"),
            g.nth(-2).assign(which="previous"),
            g.tail(1).assign(which="latest"),
        )
        if len(p)
    ]
    runs = pd.concat(picks, ignore_index=True) if picks else pd.DataFrame()
    # a column the jobs lack (a history without file sharing) comes back empty
    return Prior(cells[[*key, *CELL_COLUMNS]], runs.reindex(columns=[*key, *RUN_COLUMNS]))


def _usable(run: Mapping) -> bool:
    return not (pd.isna(run.get("throughput_mib_s")) or pd.isna(run.get("stripe_count")))


def for_run(
    prior: pd.DataFrame,
    others: pd.DataFrame,
    nprocs: int,
    max_osts: int | None = None,
    growth: str = "double",
) -> StripeAdvice | None:
    """What DCA-IO sets for an application's next execution (§IV-A, Procedure 1 / §IV-B, Procedure 2).

    `prior`: the application's earlier runs (sorted by start_time here, stably); runs with a null
    throughput or stripe count are skipped. 0 usable runs -> `initial(others, nprocs)`; 1 -> the rule
    phase from its sharing and I/O processes; 2 or more -> the heuristic phase on the last two.
    """
    _check(growth)
    if "start_time" in prior.columns:
        prior = prior.sort_values("start_time", kind="stable")
    records = prior.to_dict("records")
    runs = [r for r in records if _usable(r)]
    return _advise(
        runs, len(records) - len(runs), lambda: initial(others, nprocs), nprocs, max_osts, growth
    )


def _add_to_sums(sums: dict, values: Mapping, nprocs, app, tp: float, n: int) -> None:
    """Procedure 1's sums: `n` jobs of throughput sum `tp` with `nprocs` processes and the stripe
    count and size in `values`, added per (column, nprocs) and, unless `app` is None, per
    (column, nprocs, app)."""
    for col in ("stripe_count", "stripe_size"):
        v = values[col]
        if pd.isna(v):
            continue
        for k in ((col, nprocs),) + (((col, nprocs, app),) if app is not None else ()):
            cell = sums.setdefault(k, {}).setdefault(int(v), [0.0, 0])
            cell[0] += tp
            cell[1] += n


def _seed(
    prior: Prior, apps: pd.DataFrame, key: list, runs: dict, skipped: dict, sums: dict
) -> None:
    """`advise_runs`' state from `prior`: every application's run list and skipped count, and
    Procedure 1's sums, for the applications of `apps` (the key's columns and their `_app` code);
    the other applications' jobs count in the per-nprocs totals only."""
    apps = apps.rename(columns={"_app": "app_code"})
    cells = prior.cells.merge(apps, on=key, how="left")
    usable = cells["stripe_count"].notna()
    per_app = (
        cells[cells["app_code"].notna()]
        .assign(_usable=cells["tp_n"].where(usable, 0))
        .groupby("app_code")
        .agg(jobs=("jobs", "sum"), usable=("_usable", "sum"))
    )
    for app, c in per_app.iterrows():
        if c.jobs > c.usable:
            skipped[int(app)] = int(c.jobs - c.usable)
    known = cells[cells["nprocs"].notna() & (cells["tp_n"] > 0)]
    for c in known.to_dict("records"):
        app = None if pd.isna(c["app_code"]) else int(c["app_code"])
        _add_to_sums(sums, c, c["nprocs"], app, float(c["tp_sum"]), int(c["tp_n"]))
    picks = prior.runs.merge(apps, on=key)
    for app, rows in picks.groupby("app_code"):
        got = {r["which"]: r for r in rows.to_dict("records")}
        n = int(per_app.loc[app, "usable"]) if app in per_app.index else 0
        if not n or "first" not in got:
            continue
        last = [got[w] for w in ("previous", "latest") if w in got][-min(n, 2) :]
        runs[int(app)] = _Runs(n, got["first"], last)


def advise_runs(
    jobs: pd.DataFrame,
    key: Sequence[str] = ("program",),
    max_osts: int | None = None,
    growth: str = "double",
    prior: Prior | None = None,
) -> pd.DataFrame:
    """For every job, what DCA-IO would have set for that execution from what was known before it.

    An application is one value of `key`. Jobs are taken in (start_time, log_id) order; a job's
    prior runs are its application's earlier jobs, its `others` the other applications' jobs that
    started strictly earlier. Procedure 1's per-(nprocs, value) throughput sums are kept as jobs
    arrive (less the asking application's own share), so an initial advice costs O(distinct values).

    A job with neither a stripe count nor a stripe size adds nothing but one to its application's
    skipped runs, so a caller may leave such jobs out and give each job it keeps, in the optional
    column `SKIPPED_BEFORE`, how many of its application's earlier jobs (in the same order) it left
    out: the advice, run numbers and evidence are then those of the whole history.

    `prior`: what was known before these jobs (`Prior`, of every job that started before the
    earliest of them; `SKIPPED_BEFORE` then counts the left-out jobs among these only): the advice
    of these jobs is then that of the replay over the prior jobs and these together. Its throughput
    sums may be added in another order than the whole replay's, so a mean can differ from it in the
    last bits of a double.
    """
    _check(growth)
    df = jobs.reset_index(drop=True)
    df = df.assign(_app=df.groupby(list(key), dropna=False, sort=False).ngroup())
    df = df.sort_values(["start_time", "log_id"], kind="stable", na_position="last")
    recs = df[[*RECORD_COLUMNS, "_app"]].to_dict("records")
    before = (
        df[SKIPPED_BEFORE].fillna(0).astype("int64").tolist()
        if SKIPPED_BEFORE in df.columns
        else [0] * len(df)
    )
    group = pd.factorize(df["start_time"])[
        0
    ].tolist()  # equal start times (and all null ones) share a code
    runs: dict[int, _Runs] = {}
    skipped: dict[int, int] = {}
    sums: dict[
        tuple, dict
    ] = {}  # (column, nprocs[, app]) -> value -> [throughput sum, jobs], jobs known so far
    out = []

    def add(r: dict):
        if pd.isna(r["throughput_mib_s"]) or pd.isna(r["nprocs"]):
            return
        _add_to_sums(sums, r, r["nprocs"], r["_app"], float(r["throughput_mib_s"]), 1)

    def first_advice(r: dict) -> StripeAdvice | None:
        if pd.isna(r["nprocs"]):
            return None
        stats = []
        for col in ("stripe_count", "stripe_size"):
            mine = sums.get((col, r["nprocs"], r["_app"]), {})
            less = {
                v: (t - mine.get(v, (0.0, 0))[0], n - mine.get(v, (0.0, 0))[1])
                for v, (t, n) in sums.get((col, r["nprocs"]), {}).items()
            }
            stats.append({v: tn for v, tn in less.items() if tn[1]})
        return _from_stats(*stats, r["nprocs"])

    if prior is not None:
        _seed(prior, df[[*key, "_app"]].drop_duplicates(key), list(key), runs, skipped, sums)

    start = 0
    for i, r in enumerate(recs):
        if group[i] != group[start]:  # a new start time: the jobs before it become known
            for j in range(start, i):
                add(recs[j])
            start = i
        app = r["_app"]
        app_runs, n_left = runs.setdefault(app, _Runs()), skipped.get(app, 0)
        n_skipped = n_left + before[i]
        # `_advise` calls the closure before the loop moves on; `r=r` binds this job's record anyway
        a = _advise(app_runs, n_skipped, lambda r=r: first_advice(r), r["nprocs"], max_osts, growth)
        if a is not None:
            out.append(
                {
                    "log_id": r["log_id"],
                    "run_number": len(app_runs) + n_skipped + 1,
                    "phase": a.phase,
                    "current_count": r["stripe_count"],
                    "current_size": r["stripe_size"],
                    "stripe_count": a.stripe_count,
                    "stripe_size": a.stripe_size,
                    "evidence": list(a.evidence),
                    "command": a.command(),
                }
            )
        if _usable(r):
            app_runs.append(r)
        else:
            skipped[app] = n_left + 1
    res = pd.DataFrame(out, columns=OUT_COLUMNS)
    for c in ("current_count", "current_size"):
        res[c] = pd.to_numeric(res[c], errors="coerce").astype("Int64")
    return res.astype({"run_number": "int64", "stripe_count": "int64", "stripe_size": "int64"})
