"""Where `iolake report JOB` spends its time on a lake, and what each table's file statistics
cost a snapshot open and the whole report.

    python -m bench.report_reads LAKE JOB [--rounds 3] [--stats-table bronze/stdio ...]
        [--declared-stats [--ghosts N]]

1. In this process, `--rounds` times (a new `LakeReader` each, as each `iolake report` is): the
   seconds of `find_job`, `build` (the reads, prefetched in threads, and the figures) and
   `render`, and the eight largest sums of seconds in one table's calls of `iolake.lake.arrow`
   (`open_table`, `read_logs`, `read`; the outer call only, summed over the prefetch threads, so
   together more than the wall).
2. For each `--stats-table` (`layer/name`): a scratch copy of its Delta log (the data folders
   linked, not copied) whose add actions keep statistics of `log_id` only (the column a job's
   reads skip files by), then the snapshot opened `--rounds` x 5 times each way, alternating;
   the mean milliseconds of each and the size of each log.
3. `--declared-stats`: a scratch copy of the whole lake (tables linked) in which every table whose
   files hold statistics of more columns than its spec now declares (`stats_columns`: decision
   0049) gets a copy of its Delta log cut to those, as files written under the declaration would
   be; then the report on LAKE and on the copy, `--rounds` times, alternating which goes first.
   `--ghosts N` makes both sides copies whose every table's snapshot holds N + 1 times its files:
   N copies of each add action naming no real file, their log_id bounds above every log_id, so a
   job's reads prune them unopened, then a checkpoint (`copy_log`): a larger lake's snapshots
   for the same job's reads.

Nothing in the lake is written. Not a CLI timing: interpreter start and imports (about a second)
are outside it; `/usr/bin/time iolake report JOB --lake LAKE` gives the whole command.
"""

from __future__ import annotations

import collections
import functools
import json
import sys
import threading
import time
from pathlib import Path

from bench.common import alternate, parser, result, scratch

TIMED = ("open_table", "read_logs", "read")


@functools.cache
def _timed_arrow() -> dict[str, list[float]]:
    """Wraps `iolake.lake.arrow`'s table calls (once per process) to add up their seconds per
    (call, table)."""
    from iolake.lake import arrow

    spent: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
    lock, depth = threading.Lock(), threading.local()

    def wrap(name: str):
        fn = getattr(arrow, name)

        def timed(*args, **kwargs):
            outer = not getattr(depth, "n", 0)  # `read_logs` calls `read`: count the outer call
            depth.n = getattr(depth, "n", 0) + 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                depth.n -= 1
                if outer:
                    spec = next((a for a in args if hasattr(a, "layer")), None)
                    key = f"{name} {spec.layer}/{spec.name}" if spec is not None else name
                    with lock:
                        spent[key][0] += time.perf_counter() - t0
                        spent[key][1] += 1

        setattr(arrow, name, timed)

    for name in TIMED:
        wrap(name)
    return spent


def report_rounds(lake: str, job: str, rounds: int) -> list[dict]:
    import apps.report as report
    from iolake.config import load_config

    conf = load_config("local", overrides={"lake": {"root": lake}})
    spent = _timed_arrow()
    out = []
    for _ in range(rounds):
        spent.clear()
        t0 = time.perf_counter()
        reader = report.LakeReader(conf)
        log_id = report.find_job(reader, job)
        t1 = time.perf_counter()
        page = report.build(reader, log_id)
        t2 = time.perf_counter()
        report.render(page)
        t3 = time.perf_counter()
        top = sorted(spent.items(), key=lambda kv: -kv[1][0])[:8]
        out.append(
            {
                "find_job": t1 - t0,
                "build": t2 - t1,
                "render": t3 - t2,
                "total": t3 - t0,
                "calls": {k: (round(s, 3), n) for k, (s, n) in top},
            }
        )
    return out


def copy_log(
    table: Path, into: Path, keep: tuple[str, ...] | None = ("log_id",), ghosts: int = 0
) -> Path:
    """`table`'s Delta log copied into `into` (data folders linked): add statistics cut to the
    columns `keep` (None: as they are); with `ghosts`, each add action followed by that many
    copies naming files that do not exist, their log_id bounds above every log_id (so any read
    of a log prunes them unopened), then a checkpoint written: the snapshot of a table with
    (1 + ghosts) times its files, as a lake that many times larger has, for the same reads."""
    into.mkdir(parents=True)
    for part in table.iterdir():
        if part.name != "_delta_log":
            (into / part.name).symlink_to(part)
    log = into / "_delta_log"
    log.mkdir()
    for commit in sorted((table / "_delta_log").glob("*.json")):
        lines = []
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            add = action.get("add")
            stats = json.loads(add["stats"]) if add and add.get("stats") else None
            if stats is not None and keep is not None:
                for k in ("minValues", "maxValues", "nullCount"):
                    if k in stats:
                        stats[k] = {c: v for c, v in stats[k].items() if c in keep}
                add["stats"] = json.dumps(stats)
            lines.append(json.dumps(action))
            if stats is not None and ghosts and "log_id" in stats.get("minValues", {}):
                for i in range(ghosts):
                    ghost = dict(add, path=f"{add['path']}.ghost{i}")
                    bounds = {k: dict(stats[k]) for k in ("minValues", "maxValues")}
                    bounds["minValues"]["log_id"] = bounds["maxValues"]["log_id"] = f"~{i}"
                    ghost["stats"] = json.dumps({**stats, **bounds})
                    lines.append(json.dumps({"add": ghost}))
        (log / commit.name).write_text("\n".join(lines) + "\n")
    if list((table / "_delta_log").glob("*.checkpoint*.parquet")):
        raise SystemExit(f"{table}: has checkpoints; this copy rewrites JSON commits only")
    if ghosts:
        from deltalake import DeltaTable

        DeltaTable(str(into)).create_checkpoint()
    return into


def lake_copy(lake: Path, into: Path, declared: bool, ghosts: int = 0) -> list[str]:
    """LAKE copied table by table into `into` (`copy_log`: logs copied, data linked), each table's
    statistics cut to what its spec now declares (`stats_columns`, decision 0049) when `declared`,
    else kept as written; a table needing neither is linked. Returns the tables whose statistics
    were cut."""
    from iolake.lake.files import stats_columns
    from schemas import TABLES

    cut = []
    for layer in sorted(p for p in lake.iterdir() if p.is_dir()):
        (into / layer.name).mkdir(parents=True)
        for table in sorted(p for p in layer.iterdir() if p.is_dir()):
            spec = TABLES.get(table.name)
            keep = tuple(stats_columns(spec)) if spec is not None and declared else None
            narrower = keep is not None and bool(_held_stats(table) - set(keep))
            if narrower or (ghosts and (table / "_delta_log").is_dir()):
                copy_log(table, into / layer.name / table.name, keep if narrower else None, ghosts)
                cut += [f"{layer.name}/{table.name}"] if narrower else []
            else:
                (into / layer.name / table.name).symlink_to(table)
    for other in lake.iterdir():
        if not other.is_dir():
            (into / other.name).symlink_to(other)
    return cut


def _held_stats(table: Path) -> set[str]:
    """The columns the first add action with statistics of `table` has bounds or counts for."""
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            add = json.loads(line).get("add")
            if add and add.get("stats"):
                return set(json.loads(add["stats"]).get("nullCount", {}))
    return set()


def open_ms(paths: dict[str, Path], rounds: int) -> dict[str, float]:
    from deltalake import DeltaTable

    times = {k: [] for k in paths}
    for r in range(rounds * 5):
        order = list(paths) if r % 2 == 0 else list(reversed(paths))
        for k in order:
            t0 = time.perf_counter()
            DeltaTable(str(paths[k]))
            times[k].append(1000 * (time.perf_counter() - t0))
    return {k: sum(v) / len(v) for k, v in times.items()}


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.glob("*.json"))


def main(argv=None) -> int:
    p = parser(__spec__.name, __doc__)
    p.add_argument("lake", type=Path)
    p.add_argument("job", help="a log_id, a prefix of one or a jobid")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--stats-table", action="append", default=[], metavar="LAYER/NAME")
    p.add_argument("--declared-stats", action="store_true")
    p.add_argument(
        "--ghosts",
        type=int,
        default=0,
        help="with --declared-stats: N pruned copies of every file's add action",
    )
    args = p.parse_args(argv)
    rows = report_rounds(str(args.lake), args.job, args.rounds)
    for i, r in enumerate(rows, 1):
        print(
            f"round {i}: find_job {r['find_job']:.2f} s, build {r['build']:.2f} s, "
            f"render {r['render']:.2f} s, total {r['total']:.2f} s"
        )
        for k, (s, n) in r["calls"].items():
            print(f"    {s:7.3f} s  x{n}  {k}")
    best = min(r["total"] for r in rows)
    opened = []
    with scratch("report_reads") as tmp:
        for name in args.stats_table:
            table = args.lake / name
            slim = copy_log(table, tmp / name.replace("/", "_"))
            ms = open_ms({"as written": table, "log_id stats only": slim}, args.rounds)
            sizes = {
                "as written": _size(table / "_delta_log"),
                "log_id stats only": _size(slim / "_delta_log"),
            }
            for k, v in ms.items():
                print(f"{name}: open {v:.1f} ms, Delta log {sizes[k] / 2**20:.2f} MiB ({k})")
            opened.append(
                f"{name} open {ms['as written']:.0f} -> {ms['log_id stats only']:.0f} ms "
                "(log_id statistics only)"
            )
        if args.declared_stats:
            lakes = {"as written": args.lake, "declared": tmp / "declared"}
            if args.ghosts:
                lakes["as written"] = tmp / "as_written"
                lake_copy(args.lake, lakes["as written"], declared=False, ghosts=args.ghosts)
            cut = lake_copy(args.lake, lakes["declared"], declared=True, ghosts=args.ghosts)
            print(f"statistics cut to the declared columns in {len(cut)} tables: {', '.join(cut)}")
            if args.ghosts:
                print(f"every table's snapshot holds {1 + args.ghosts} times its files (ghosts)")
            totals: dict[str, list[float]] = {k: [] for k in lakes}

            def timed(k: str) -> tuple[float, None]:
                totals[k].append(report_rounds(str(lakes[k]), args.job, 1)[0]["total"])
                return totals[k][-1], None

            best_of, _ = alternate(args.rounds, timed, tuple(lakes))
            for k, v in totals.items():
                print(f"report, {k}: " + ", ".join(f"{x:.2f}" for x in v) + " s")
            opened.append(
                f"report {best_of['as written']:.2f} -> {best_of['declared']:.2f} s "
                f"with declared statistics (best of {args.rounds}"
                + (f", {1 + args.ghosts}x the files)" if args.ghosts else ")")
            )
    result(
        "report_reads",
        f"best of {args.rounds}: {best:.2f} s in process"
        + (f"; {', '.join(opened)}" if opened else ""),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
