"""What `bronze/io_ops`'s file layout costs: bytes, point lookups and the stages that read it.

    python -m bench.layout_cost LAKE [--layouts staged maintain zorder1 compact]
        [--stages features covering tags] [--rounds 1] [--lookups 30] [--work DIR]

LAKE is an ingested lake (bronze only is enough; it is only read). Each layout is a copy of it:
- `staged`: as ingest left it (with `ingest.commit: files`, the decode tasks' Parquet files);
- `maintain`: after `iolake maintain` (every table: OPTIMIZE with each spec's Z-order, VACUUM);
- `zorder2`, `zorder1`, `compact`: only `io_ops` rewritten by Delta's OPTIMIZE, Z-ordered by
  (log_id, record_id) (what `maintain` does to it), by log_id alone, or compaction only.

Printed per layout: the rewrite's seconds, `io_ops`'s active files and bytes (DESCRIBE DETAIL),
the mean time of `--lookups` point reads of one log's `io_ops` rows through delta-rs (what
`iolake report` and `IOFrame.from_lake` do), and then each `--stages` stage's own seconds
(`iolake stage NAME`, a fresh JVM each, as a user runs it), layouts interleaved stage by stage
and round by round, each run on a fresh copy of its layout without silver/gold. Ratios are
against the first layout, measured in the same run. Reads LAKE only; copies go to `--work`.

    python -m bench.layout_cost LAKE --point-reads [--base-rev REV] [--lookups 3] [--rounds 3]
        [--fleet]

`--point-reads`: what one job costs to read from LAKE as it is (no copy, no Spark): for
`--lookups` logs, `iolake report PREFIX` (a 12-character log_id prefix; wall seconds and peak RSS
of the process), `IOFrame.from_lake(LAKE, log_id=...)` (seconds in the process) — each for the
code of `--base-rev` (a `git archive` of it) and of this tree, alternating, best of `--rounds` —
and a DuckDB count of the log's `bronze/io_ops` rows, the whole table registered (`WHERE log_id =
?`) against the documented month-pruned query (docs/querying.md), alternating in one process.
`--fleet` also times `iolake fleet` (the whole dashboard into a scratch folder; wall seconds and
peak RSS) for both trees, alternating, best of `--rounds`.

    python -m bench.layout_cost WORK --ingest-ab CORPUS... [--base-rev REV] [--rounds-ingest 2]
        [--task-max-logs N] [--lookups 3] [--rounds-reads 3]

`--ingest-ab`: how the decode tasks' plan (`jobs/ingest.py` `plan_tasks`) lays out the staged
files. Each round ingests CORPUS into a fresh lake under WORK with the code of `--base-rev` and of
this tree (`python -m jobs.ingest`, a JVM each, the tree's own conf/ — with `ingest.task_max_logs`
set to N in both when given), alternating which goes first; it prints the ingest seconds of each,
then, on the last round's two lakes: the staged files per table-month and, for `--lookups` logs,
how many of their month's files have a log_id min/max range that holds the log (what a point read
opens), and then `--point-reads` with the base lake as LAKE and this tree's as OTHER_LAKE.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (
    ROOT,
    STAGE_DONE,
    alternate,
    checkout,
    ingest_run,
    iolake_cmd,
    parser,
    result,
    tree_env,
)

DUCKDB_PROBE = r"""
import sys, time, duckdb
from deltalake import DeltaTable
lake, log_id, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
duckdb.execute("SET enable_progress_bar = false")
def whole():
    con = duckdb.connect()
    con.register("io_ops", DeltaTable(f"{lake}/bronze/io_ops").to_pyarrow_dataset())
    return con.sql("SELECT count(*) FROM io_ops WHERE log_id = ?", params=[log_id]).fetchall()[0][0]
def pruned():  # docs/querying.md, "One job's rows"
    con = duckdb.connect()
    con.register("logs", DeltaTable(f"{lake}/bronze/logs").to_pyarrow_dataset())
    ((full, month),) = con.sql(
        "SELECT log_id, job_month FROM logs WHERE starts_with(log_id, ?)", params=[log_id[:12]]
    ).fetchall()
    ops = DeltaTable(f"{lake}/bronze/io_ops").to_pyarrow_dataset(
        file_pruning_predicate=[("job_month", "=", month), ("log_id", "=", full)]
    )
    con.register("io_ops", ops)
    return con.sql(
        "SELECT count(*) FROM io_ops WHERE job_month = ? AND log_id = ?", params=[month, full]
    ).fetchall()[0][0]
queries = [(q, {"whole": whole, "pruned": pruned}[q]) for q in sys.argv[4].split(",")]
for k in range(rounds):
    for name, f in queries if k % 2 == 0 else queries[::-1]:
        t = time.perf_counter(); n = f(); s = time.perf_counter() - t
        print(name, n, f"{s:.3f}", flush=True)
"""
FRAME_PROBE = r"""
import sys, time
from apps.analysis import IOFrame
t = time.perf_counter()
f = IOFrame.from_lake(sys.argv[1], log_id=sys.argv[2])
print(time.perf_counter() - t, len(f.ops), len(f.counters))
"""

IO_OPS_ONLY = {"zorder2": ("log_id", "record_id"), "zorder1": ("log_id",), "compact": ()}
LAYOUTS = ("staged", "maintain", *IO_OPS_ONLY)
DERIVED = ("silver", "gold", "ops/empty_logs")  # what the stages write: never copied


def iolake(*args: str) -> str:
    """Run `iolake ARGS` (this tree) and return its output; exit on failure, with its tail."""
    p = subprocess.run(iolake_cmd(*args), capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        raise SystemExit(
            f"iolake {' '.join(args)} exited {p.returncode}:\n{(p.stdout + p.stderr)[-2000:]}"
        )
    return p.stdout


def copy_bronze(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(
        src,
        dst,
        ignore=lambda d, names: [
            n for n in names if any((Path(d) / n) == src / x for x in DERIVED)
        ],
    )


def rewrite(spark, lake: Path, layout: str) -> float:
    """Give `lake` the layout; returns the seconds it took (`staged`: nothing to do)."""
    from delta.tables import DeltaTable

    t0 = time.perf_counter()
    if layout == "maintain":
        iolake("maintain", "--lake", str(lake))
    elif layout in IO_OPS_ONLY:
        opt = DeltaTable.forPath(spark, str(lake / "bronze/io_ops")).optimize()
        cols = IO_OPS_ONLY[layout]
        (opt.executeZOrderBy(*cols) if cols else opt.executeCompaction()).collect()
    return time.perf_counter() - t0


def detail(spark, lake: Path) -> tuple[int, int]:
    d = spark.sql(f"DESCRIBE DETAIL delta.`{lake / 'bronze/io_ops'}`").first()
    return int(d.numFiles), int(d.sizeInBytes)


def lookup_ms(lake: Path, log_ids: list[str]) -> float:
    """Mean milliseconds to read one log's io_ops rows through delta-rs."""
    import pyarrow.compute as pc

    from iolake.lake import arrow
    from schemas import TABLES

    t0 = time.perf_counter()
    for i in log_ids:
        arrow.read(str(lake), TABLES["io_ops"], filter=pc.field("log_id").isin([i]))
    return (time.perf_counter() - t0) / len(log_ids) * 1000


def stage_seconds(stage: str, lake: Path) -> float:
    out = iolake("stage", stage, "--lake", str(lake))
    found = [
        float(m.group(2))
        for m in map(STAGE_DONE.match, out.splitlines())
        if m and m.group(1) == stage
    ]
    if not found:
        raise SystemExit(f"iolake stage {stage}: no 'done in' line:\n{out[-2000:]}")
    return found[-1]


def timed_command(tree: Path, *args: str) -> tuple[float, int]:
    """`iolake ARGS` of `tree`'s code: (wall seconds, peak RSS in KiB) by GNU time."""
    p = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", *iolake_cmd(*args)],
        capture_output=True,
        text=True,
        cwd=tree,
        env=tree_env(tree),
    )
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args)} ({tree}) exited {p.returncode}:\n{p.stderr[-2000:]}")
    wall, rss = p.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss)


def report_run(tree: Path, lake: Path, job: str, out: Path) -> tuple[float, int]:
    """`iolake report JOB` of `tree`'s code: (wall seconds, peak RSS in KiB)."""
    return timed_command(tree, "report", job, "--lake", str(lake), "--out", str(out))


def fleet_run(tree: Path, lake: Path, out: Path) -> tuple[float, int]:
    """`iolake fleet` of `tree`'s code into `out` (emptied first): (wall seconds, peak RSS in KiB)."""
    shutil.rmtree(out, ignore_errors=True)
    return timed_command(tree, "fleet", "--lake", str(lake), "--out", str(out))


def frame_seconds(tree: Path, lake: Path, log_id: str) -> tuple[float, str]:
    p = subprocess.run(
        [sys.executable, "-c", FRAME_PROBE, str(lake), log_id],
        capture_output=True,
        text=True,
        cwd=tree,
        env=tree_env(tree),
        check=True,
    )
    seconds, *rows = p.stdout.split()
    return float(seconds), " ".join(rows)


def point_reads(args) -> int:
    """`--point-reads`: report, IOFrame.from_lake and DuckDB, base tree against this one."""
    from iolake.lake import arrow
    from schemas import TABLES

    ledger = arrow.read(
        str(args.lake), TABLES["logs"], ["log_id"], pc_field_equals("status", "ok")
    ).column("log_id")
    ids_all = sorted(ledger.to_pylist())
    ids = list(ids_all)
    random.Random(7).shuffle(ids)
    ids = ids[: args.lookups]
    if args.log_ids:  # these jobs (prefixes of log ids) first, then --lookups random ones
        found = {p: next((i for i in ids_all if i.startswith(p)), None) for p in args.log_ids}
        if missing := [p for p, i in found.items() if i is None]:
            raise SystemExit(f"{args.lake}: no ok log starts with {', '.join(missing)}")
        ids = list(found.values()) + [i for i in ids if i not in found.values()]
    work = Path(tempfile.mkdtemp(prefix="point_reads-"))
    this_tree = checkout(args.this_rev, work / "this") if args.this_rev else ROOT
    if args.other_lake:  # two layouts of the lake: one tree, or --base-rev on LAKE
        base_tree = checkout(args.base_rev, work / "base") if args.base_rev else this_tree
        trees = {"base": base_tree, "this": this_tree}
        lakes = {"base": args.lake, "this": args.other_lake}
    else:
        trees = {"base": checkout(args.base_rev, work / "base"), "this": this_tree}
        lakes = {"base": args.lake, "this": args.lake}
    out = work / "page.html"
    print(f"{'log':<14} {'probe':<10} {'base':>8} {'this':>8} {'x':>6}", flush=True)
    ratios = {"report": [], "from_lake": [], "duckdb": []}
    if args.fleet:
        best, rss = alternate(
            args.rounds, lambda name: fleet_run(trees[name], lakes[name], work / f"fleet-{name}")
        )
        ratios["fleet"] = [best["this"] / best["base"]]
        print(
            f"{'(lake)':<14} {'fleet':<10} {best['base']:8.2f} {best['this']:8.2f} "
            f"{best['this'] / best['base']:6.3f}  peak RSS (last round) {rss['base'] // 1024} -> "
            f"{rss['this'] // 1024} MiB",
            flush=True,
        )
    for log_id in ids:
        best, rss = alternate(
            args.rounds,
            lambda name, j=log_id: report_run(trees[name], lakes[name], j[:12], out),
        )
        ratios["report"].append(best["this"] / best["base"])
        print(
            f"{log_id[:12]:<14} {'report':<10} {best['base']:8.2f} {best['this']:8.2f} "
            f"{best['this'] / best['base']:6.3f}  peak RSS (last round) {rss['base'] // 1024} -> "
            f"{rss['this'] // 1024} MiB",
            flush=True,
        )
        best, rows = alternate(
            args.rounds, lambda name, j=log_id: frame_seconds(trees[name], lakes[name], j)
        )
        if rows["base"] != rows["this"]:
            raise SystemExit(
                f"{log_id}: from_lake differs: base {rows['base']}, this {rows['this']}"
            )
        ratios["from_lake"].append(best["this"] / best["base"])
        print(
            f"{log_id[:12]:<14} {'from_lake':<10} {best['base']:8.2f} {best['this']:8.2f} "
            f"{best['this'] / best['base']:6.3f}  (ops, counters: {rows['this']})",
            flush=True,
        )
        if args.other_lake:  # the month-pruned query on both layouts, alternating
            best, n = alternate(
                args.rounds, lambda name, j=log_id: duckdb_seconds(lakes[name], j, 1, "pruned")[1:]
            )
            whole, pruned, note = best["base"], best["this"], f"{n['this']} rows, month-pruned"
        else:  # the whole-table query against the month-pruned one, alternating in one process
            whole, pruned, n = duckdb_seconds(args.lake, log_id, args.rounds)
            note = f"{n} rows; base: whole table, this: month-pruned"
        ratios["duckdb"].append(pruned / whole)
        print(
            f"{log_id[:12]:<14} {'duckdb':<10} {whole:8.2f} {pruned:8.2f} {pruned / whole:6.3f}"
            f"  ({note})",
            flush=True,
        )
    shutil.rmtree(work, ignore_errors=True)
    result(
        "layout_cost",
        "point reads this/base: "
        + ", ".join(f"{k} {max(v):.3f}x at most" for k, v in ratios.items()),
    )
    return 0


def duckdb_seconds(
    lake: Path, log_id: str, rounds: int, queries: str = "whole,pruned"
) -> tuple[float | None, float, str]:
    """DUCKDB_PROBE on `lake`: best seconds of the whole-table (None when not run) and the
    month-pruned query, and the row count (the two must agree)."""
    p = subprocess.run(
        [sys.executable, "-c", DUCKDB_PROBE, str(lake), log_id, str(rounds), queries],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [
        ln.split() for ln in p.stdout.splitlines() if ln.split()[:1] in (["whole"], ["pruned"])
    ]
    counts = {w[1] for w in lines}
    if len(counts) != 1:
        raise SystemExit(f"{log_id}: DuckDB counts differ: {lines}")
    best = {
        k: min((float(w[2]) for w in lines if w[0] == k), default=None) for k in ("whole", "pruned")
    }
    return best["whole"], best["pruned"], counts.pop()


def conf_copy(tree: Path, into: Path, task_max_logs: int | None) -> Path:
    """`tree`'s conf/ copied to `into`, with `ingest.task_max_logs` set when given."""
    shutil.copytree(tree / "conf", into)
    if task_max_logs:
        base = into / "base.yaml"
        text, n = re.subn(
            r"^(\s+task_max_logs:\s*)\d+", rf"\g<1>{task_max_logs}", base.read_text(), flags=re.M
        )
        if n != 1:
            raise SystemExit(f"{base}: no ingest.task_max_logs line to set")
        base.write_text(text)
    return into


def layout_facts(lake: Path, log_ids: list[str], tables=("io_ops", "posix")) -> dict:
    """Per table: (table-months, staged files, files per table-month, mean files a point read of
    one of `log_ids` must open: those of its month whose log_id min/max range holds it)."""
    from deltalake import DeltaTable

    from iolake.lake import arrow
    from schemas import TABLES

    months = dict(
        zip(*arrow.read(str(lake), TABLES["logs"], ["log_id", "job_month"]).to_pydict().values())
    )
    out = {}
    for name in tables:
        adds = DeltaTable(TABLES[name].path(str(lake))).get_add_actions(flatten=True)
        rows = list(
            zip(
                adds.column("partition.job_month").to_pylist(),
                adds.column("min.log_id").to_pylist(),
                adds.column("max.log_id").to_pylist(),
            )
        )
        per_month: dict[str, int] = {}
        for m, _, _ in rows:
            per_month[m] = per_month.get(m, 0) + 1
        opened = [
            sum(
                1
                for m, lo, hi in rows
                if m == months[i] and (lo is None or hi is None or lo <= i <= hi)
            )
            for i in log_ids
        ]
        out[name] = (
            len(per_month),
            len(rows),
            len(rows) / max(1, len(per_month)),
            sum(opened) / max(1, len(opened)),
        )
    return out


def ingest_ab(args) -> int:
    """`--ingest-ab`: the base plan's lake against this tree's, ingest seconds and layout."""
    from iolake.lake import arrow
    from schemas import TABLES

    work = args.lake
    work.mkdir(parents=True, exist_ok=True)
    trees = {"base": checkout(args.base_rev, work / "tree-base"), "this": ROOT}
    confs = {k: conf_copy(t, work / f"conf-{k}", args.task_max_logs) for k, t in trees.items()}
    lakes = {k: work / f"lake-{k}" for k in trees}
    tasks: dict[str, int] = {}

    def timed(name: str) -> tuple[float, int]:
        shutil.rmtree(lakes[name], ignore_errors=True)
        got = ingest_run(args.corpus, lakes[name], trees[name], confs[name])
        seconds, tasks[name] = got["stage"], got["tasks"]
        print(f"  ingest {name}: {seconds:.1f} s, {tasks[name]} decode tasks", flush=True)
        return seconds, tasks[name]

    best, _ = alternate(args.rounds_ingest, timed)
    print(
        f"ingest best of {args.rounds_ingest}: base {best['base']:.1f} s, this "
        f"{best['this']:.1f} s ({best['this'] / best['base']:.3f}x)",
        flush=True,
    )
    ids = sorted(
        arrow.read(str(lakes["base"]), TABLES["logs"], ["log_id"], pc_field_equals("status", "ok"))
        .column("log_id")
        .to_pylist()
    )
    random.Random(7).shuffle(ids)
    sample = ids[: max(args.lookups, 200)]
    facts = {k: layout_facts(lakes[k], sample) for k in lakes}
    print(f"\n{'lake':<5} {'table':<7} {'months':>6} {'files':>6} {'per month':>9} {'opened':>7}")
    for k, f in facts.items():
        for t, (m, n, per, opened) in f.items():
            print(f"{k:<5} {t:<7} {m:6d} {n:6d} {per:9.1f} {opened:7.2f}")
    print(f"(opened: mean over {len(sample)} ok logs)\n", flush=True)
    args.lake, args.other_lake, args.this_rev = lakes["base"], lakes["this"], None
    args.rounds = args.rounds_reads
    point_reads(args)
    result(
        "layout_cost",
        f"ingest this/base {best['this'] / best['base']:.3f}x; io_ops files opened per point read "
        f"{facts['base']['io_ops'][3]:.1f} -> {facts['this']['io_ops'][3]:.1f}",
    )
    return 0


def pc_field_equals(column: str, value):
    import pyarrow.compute as pc

    return pc.field(column) == value


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("lake", type=Path)
    ap.add_argument(
        "--layouts",
        nargs="+",
        default=["staged", "maintain", "zorder1", "compact"],
        choices=LAYOUTS,
    )
    ap.add_argument("--stages", nargs="+", default=["features", "covering", "tags"])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--lookups", type=int, default=30)
    ap.add_argument(
        "--work",
        type=Path,
        default=None,
        help="scratch folder for the copies (default: a temp dir)",
    )
    ap.add_argument(
        "--point-reads",
        action="store_true",
        help="time one job's report, IOFrame.from_lake and DuckDB count on LAKE as it is",
    )
    ap.add_argument("--base-rev", default="main", help="--point-reads: the code to compare with")
    ap.add_argument("--fleet", action="store_true", help="--point-reads: time `iolake fleet` too")
    ap.add_argument("--this-rev", help="--point-reads: measure this revision, not the work tree")
    ap.add_argument(
        "--other-lake",
        type=Path,
        help="--point-reads: this tree (or --base-rev) on LAKE (base) against this tree on "
        "OTHER_LAKE (another layout of the same lake, e.g. a copy after `iolake maintain`)",
    )
    ap.add_argument("--rounds-reads", type=int, default=3, dest="rounds_reads")
    ap.add_argument(
        "--log-ids",
        nargs="+",
        metavar="PREFIX",
        help="--point-reads: these logs (log-id prefixes) before the --lookups random ones",
    )
    ap.add_argument(
        "--ingest-ab",
        nargs="+",
        dest="corpus",
        metavar="CORPUS",
        help="ingest CORPUS with --base-rev and this tree into two lakes under LAKE (a work folder), "
        "alternating; then their layouts and point reads",
    )
    ap.add_argument("--rounds-ingest", type=int, default=2, dest="rounds_ingest")
    ap.add_argument("--task-max-logs", type=int, help="--ingest-ab: ingest.task_max_logs in both")
    args = ap.parse_args(argv)
    if args.corpus:
        return ingest_ab(args)
    if args.point_reads:
        args.rounds = args.rounds_reads
        return point_reads(args)
    if not (args.lake / "bronze/io_ops/_delta_log").is_dir():
        raise SystemExit(f"{args.lake}: no bronze/io_ops Delta table (ingest a lake first)")

    from iolake.config import load_config
    from iolake.lake import arrow
    from iolake.spark import build_session
    from schemas import TABLES

    work = args.work or Path(tempfile.mkdtemp(prefix="layout_cost-"))
    work.mkdir(parents=True, exist_ok=True)
    conf = load_config("local", overrides={"lake": {"root": str(args.lake)}})
    spark = build_session(conf.spark.app_name, conf.spark.master, conf.spark.properties)
    ids = (
        arrow.read(str(args.lake), TABLES["jobs"], columns=["log_id"]).column("log_id").to_pylist()
    )
    random.Random(7).shuffle(ids)
    ids = ids[: args.lookups]

    facts = {}
    for layout in args.layouts:
        base = work / f"base-{layout}"
        copy_bronze(args.lake, base)
        seconds = rewrite(spark, base, layout)
        files, size = detail(spark, base)
        facts[layout] = {"rewrite": seconds, "files": files, "bytes": size}
        print(
            f"{layout}: rewrite {seconds:.1f} s, io_ops {files} files, {size / 2**20:,.1f} MiB",
            flush=True,
        )
    spark.stop()
    for layout in args.layouts:  # after the JVM is gone: delta-rs alone
        facts[layout]["lookup"] = lookup_ms(work / f"base-{layout}", ids)
        print(f"{layout}: {len(ids)} lookups, {facts[layout]['lookup']:.0f} ms each", flush=True)

    times = {(lay, s): [] for lay in args.layouts for s in args.stages}
    for r in range(args.rounds):
        order = args.layouts if r % 2 == 0 else args.layouts[::-1]
        runs = {}
        for layout in order:
            runs[layout] = work / f"run-{layout}"
            copy_bronze(work / f"base-{layout}", runs[layout])
        for stage in args.stages:  # each stage after the ones before it, on every layout in turn
            for layout in order:
                times[layout, stage].append(stage_seconds(stage, runs[layout]))
                print(
                    f"round {r + 1} {stage} {layout}: {times[layout, stage][-1]:.1f} s", flush=True
                )

    first = args.layouts[0]
    print(
        f"\n{'layout':<9} {'rewrite s':>9} {'files':>6} {'MiB':>9} {'x':>5} {'lookup ms':>9} {'x':>5}"
        + "".join(f" {s + ' s':>12} {'x':>5}" for s in args.stages)
    )
    for layout in args.layouts:
        f, b = facts[layout], facts[first]
        row = (
            f"{layout:<9} {f['rewrite']:9.1f} {f['files']:6d} {f['bytes'] / 2**20:9.1f} {f['bytes'] / b['bytes']:5.2f} "
            f"{f['lookup']:9.0f} {f['lookup'] / b['lookup']:5.2f}"
        )
        for s in args.stages:
            best, base = min(times[layout, s]), min(times[first, s])
            row += f" {best:12.1f} {best / base:5.2f}"
        print(row)
    print(f"(stage seconds: best of {args.rounds}; copies in {work})")
    last = args.layouts[-1]
    result(
        "layout_cost",
        f"{last} against {first}: io_ops bytes {facts[last]['bytes'] / facts[first]['bytes']:.2f}x, "
        f"lookups {facts[last]['lookup'] / facts[first]['lookup']:.2f}x, "
        + ", ".join(f"{s} {min(times[last, s]) / min(times[first, s]):.2f}x" for s in args.stages),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
