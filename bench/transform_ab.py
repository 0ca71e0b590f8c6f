"""A stage's transform, a base commit's module against this tree's: identical rows, time.

    python -m bench.transform_ab --stage tags|features|covering --lake LAKE [--base REV] [--rounds 2]
    python -m bench.transform_ab --stage tags --lab     # the tags lab: every rule's case and near miss
    python -m bench.transform_ab --quick                # --stage tags --lab --rounds 1
    python -m bench.transform_ab --precedents 1000000 [--base REV] [--rounds 2]

Loads the stage's feature module of `--base` (default HEAD, from git, as a module of its own,
shipped to the Python workers by value) and of this tree:
  tags      features/bottleneck_tags.py `transform`, keyed by (log_id, tag);
  features  features/file_features.py `transform` (job_features is built on its rows and does not
            read io_ops itself), keyed by (log_id, record_id);
  covering  features/covering_sets.py `covering_sets`, keyed by (log_id, rank, record_id).
It reads the stage's inputs (pipeline.yaml; whole tables, without the new-log filter) from LAKE
once, or with `--lab` (tags only) takes tests/support/tags_lab.py's jobs, which cover the rules a
lake does not fire, and runs both transforms on them: checks the collected rows are identical
(every column, floats exactly, NaN equal to NaN, lists in order), and prints each one's seconds
(build + cache + count, as the runner does; best of `--rounds`, base and this alternating), the
ratio this/base and, for tags and features, the Exchange nodes of each physical plan. Reads the
lake only. Exit code 1 when the rows differ.

`--precedents N` times the driver's half of the precedents instead (features/precedents.py
`precedents`, no Spark): a seeded synthetic history of N runs of 51 applications with random
settings, as the advise stage gathers for a night whose jobs span every application, and the asks
of N/100 of its jobs (a what-if, two tags and a stripe row each). CPU seconds of each side, best
of `--rounds`, alternating; the answers must be equal, floats exactly.
"""

from __future__ import annotations

import collections
import importlib.util
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import ROOT, alternate, git_show, parser, result


@dataclass(frozen=True)
class Stage:
    module: str  # the feature module, relative to the project root
    key: tuple[str, ...]  # the columns that identify a row
    plan: bool  # print the Exchange nodes of the physical plan


STAGES = {
    "tags": Stage("features/bottleneck_tags.py", ("log_id", "tag"), True),
    "features": Stage("features/file_features.py", ("log_id", "record_id"), True),
    "covering": Stage("features/covering_sets.py", ("log_id", "rank", "record_id"), False),
}


def load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def modules(rev: str, module: str, work: Path) -> dict:
    """{"base": `module` as of `rev`, "this": as in this tree}, each a module of its own name."""
    from pyspark import cloudpickle  # the copy PySpark pickles UDFs with

    stem = Path(module).stem
    (work / f"base_{stem}.py").write_text(git_show(rev, module))
    out = {
        "base": load_module(f"base_{stem}", work / f"base_{stem}.py"),
        "this": load_module(f"this_{stem}", ROOT / module),
    }
    for (
        mod
    ) in out.values():  # not importable on the workers under these names: pickle the code itself
        sys.modules[mod.__name__] = mod
        cloudpickle.register_pickle_by_value(mod)
    return out


def read_inputs(spark, lake: str, stage: str) -> dict:
    """The stage's declared inputs, whole (as `StageContext.read` reads them, without the new-log
    filter), by table name (bronze tables as "io_ops", silver as "silver/file_features")."""
    from iolake.lake import read_or_empty
    from iolake.pipeline import table_spec
    from iolake.runner import stage_by_name

    return {
        (t.split("/", 1)[1] if t.startswith("bronze/") else t): read_or_empty(
            spark, table_spec(t), lake
        )
        for t in stage_by_name(stage).tables_in
    }


def builder(stage: str, mod, inputs: dict, conf):
    """A function building the stage's output frame with `mod` from `inputs`."""
    if stage == "tags":
        bronze = {k: v for k, v in inputs.items() if "/" not in k}
        return lambda: mod.transform(
            bronze, inputs["silver/file_features"], inputs["silver/job_features"], conf.tags
        )
    if stage == "features":
        return lambda: mod.transform(inputs, conf.features)
    t = inputs
    return lambda: mod.covering_sets(t["io_ops"], t["posix"], t["mpiio"], t["stdio"], t["files"])


def exchanges(df) -> int:
    return df._jdf.queryExecution().executedPlan().toString().count("Exchange")


def cached_rows(build) -> tuple[float, list]:
    """(seconds to build the frame, cache and count it, as the runner does; its collected Rows)."""
    t0 = time.perf_counter()
    df = build().cache()
    df.count()
    seconds = time.perf_counter() - t0
    rows = df.collect()
    df.unpersist()
    return seconds, rows


def same(x, y) -> bool:
    """Equal, and of one type; NaN equals NaN (floats otherwise exactly)."""
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    return type(x) is type(y) and x == y


def compare(base: list, this: list, key: tuple[str, ...]) -> list[str]:
    """Every difference between two collections of Rows matched by the `key` columns, column by column."""
    a, b = ({tuple(r[k] for k in key): r for r in rows} for rows in (base, this))
    problems = [f"row count: base {len(base)}, this {len(this)}"] if len(base) != len(this) else []
    for k in sorted(set(a) | set(b), key=repr):
        if k not in a or k not in b:
            problems.append(f"{k}: only in {'this' if k not in a else 'base'}")
            continue
        problems += [
            f"{k} {c}: base {a[k][c]!r} != this {b[k][c]!r}"
            for c in a[k].__fields__
            if not same(a[k][c], b[k][c])
        ]
    return problems


def verdict(problems: list[str]) -> int:
    """Print the differences (the first 40) or that there are none; the exit code."""
    if problems:
        print(f"NOT IDENTICAL: {len(problems)} differences")
        for p in problems[:40]:
            print("  " + p)
        return 1
    print("identical: every row, every column")
    return 0


def synthetic_history(n: int, seed: int = 0):
    """(runs, asks, key parts) for `precedents`: n runs of 51 applications, random settings and
    throughputs, 10% of stripe counts known; the asks of n // 100 of the runs."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    app = rng.integers(0, 51, n)
    runs = pd.DataFrame(
        {
            "log_id": [f"L{i:09d}" for i in range(n)],
            "exe": [f"exe{a}" for a in app],
            "uid": app.astype("int64"),
            "nprocs_bucket": "17-64",
            "fs": rng.choice(["/lus", "/gpfs", "/bb"], n),
            "direction": rng.choice(["read", "write"], n),
            "layout": rng.choice(["shared", "fpp"], n),
            "tier": rng.choice(["pfs", "bb"], n),
            "transfer_class": rng.choice([1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 20, 4 << 20], n),
            "api": rng.choice(["POSIX", "MPI-IO", "MPI-IO collective"], n),
            "file_layout": rng.choice(["shared file", "file per process"], n),
            "stripe_count": pd.array(
                np.where(rng.random(n) < 0.9, None, rng.choice([1, 4], n)), dtype="Int64"
            ),
            "throughput": rng.random(n) * 1000,
        }
    )
    jobs = runs["log_id"].sample(max(1, n // 100), random_state=seed).to_numpy()
    kinds = [
        (
            "what_if",
            "f",
            "POSIX, shared file, 4 KiB transfers, on pfs",
            "MPI-IO collective, shared file, 4 MiB transfers, on bb",
        ),
        ("tag", "small_reads", None, None),
        ("tag", "metadata_heavy", None, None),
        ("stripe", "job", "stripe count 1, stripe size 1M", "stripe count 4, stripe size 1M"),
    ]
    asks = pd.DataFrame(
        [
            {"log_id": j, "kind": k, "item": i, "current": c, "advised": a}
            for j in jobs
            for k, i, c, a in kinds
        ]
    )
    return runs, asks, ["exe", "uid", "nprocs_bucket", "fs", "direction", "layout"]


def precedents_ab(n: int, base: str, rounds: int) -> int:
    """`--precedents N`: base's and this tree's `precedents` on one synthetic history."""
    import pandas as pd

    from features.advice import TAG_DIMENSION

    mods = modules(base, "features/precedents.py", Path(tempfile.mkdtemp(prefix="iolake-prec-ab-")))
    runs, asks, key = synthetic_history(n)

    def run(way):
        t0 = time.process_time()
        out = mods[way].precedents(runs, asks, key, TAG_DIMENSION)
        return time.process_time() - t0, out

    best, rows = alternate(rounds, run)
    ratio = best["this"] / best["base"]
    print(f"{n:,} runs, {len(asks):,} asks, {len(rows['this']):,} precedents")
    print(f"base {best['base']:.1f} s CPU, this {best['this']:.1f} s CPU, this/base {ratio:.2f}")
    try:
        pd.testing.assert_frame_equal(rows["base"], rows["this"], check_exact=True)
        problems = []
    except AssertionError as e:
        problems = [str(e)]
    code = verdict(problems)
    result(
        "transform_ab",
        f"precedents on {n:,} synthetic runs, this / {base}: {ratio:.2f}x the CPU time, answers "
        f"{'identical' if not problems else 'DIFFER'} ({len(rows['this']):,})",
    )
    return code


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument(
        "--stage", choices=sorted(STAGES), help="whose transform (required unless --quick)"
    )
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--lake", help="lake root to read (not modified)")
    where.add_argument(
        "--lab",
        action="store_true",
        help="tags only: the tags lab's literal rows instead of a lake",
    )
    ap.add_argument("--base", default="HEAD", help="git revision of the base implementation")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="--stage tags --lab --rounds 1")
    ap.add_argument(
        "--precedents",
        type=int,
        metavar="N",
        help="the precedents' driver-side matching on N synthetic runs instead of a stage",
    )
    args = ap.parse_args(argv)
    if args.precedents:
        return precedents_ab(args.precedents, args.base, args.rounds)
    if args.quick:
        args.stage, args.lab, args.lake, args.rounds = "tags", True, None, 1
    if not args.stage or not (args.lake or args.lab):
        ap.error("give --stage and one of --lake / --lab")
    if args.lab and args.stage != "tags":
        ap.error("--lab is the tags lab: only with --stage tags")

    from iolake.config import load_config
    from iolake.spark import session_from_config

    stage = STAGES[args.stage]
    conf = load_config("local", overrides={"lake": {"root": args.lake or "lab"}})
    spark = session_from_config(conf)
    mods = modules(
        args.base, stage.module, Path(tempfile.mkdtemp(prefix=f"iolake-{args.stage}-ab-"))
    )
    if args.lab:
        from tests.support.tags_lab import build

        bronze, ff, jf = build().frames(spark)
        inputs = {**bronze, "silver/file_features": ff, "silver/job_features": jf}
    else:
        inputs = read_inputs(spark, args.lake, args.stage)
    builds = {way: builder(args.stage, mods[way], inputs, conf) for way in mods}
    best, rows = alternate(args.rounds, lambda way: cached_rows(builds[way]))
    problems = compare(rows["base"], rows["this"], stage.key)
    this = rows["this"]
    print(
        f"{'lab' if args.lab else 'lake ' + args.lake}: {len(this):,} rows, {len({r.log_id for r in this}):,} logs"
    )
    if args.stage == "tags":
        fired = collections.Counter(r.tag for r in this)
        print(
            "tags: "
            + ", ".join(f"{t} {n}" for t, n in sorted(fired.items(), key=lambda x: (-x[1], x[0])))
        )
    ratio = best["this"] / best["base"]
    print(f"base {best['base']:.1f} s, this {best['this']:.1f} s, this/base {ratio:.2f}")
    if stage.plan:
        print(
            f"Exchange nodes: base {exchanges(builds['base']())}, this {exchanges(builds['this']())}"
        )
    code = verdict(problems)
    result(
        "transform_ab",
        f"{args.stage} on {'the lab' if args.lab else args.lake}, this / {args.base}: "
        f"{ratio:.2f}x the time, rows {'identical' if not problems else 'DIFFER'} "
        f"({len(this):,})",
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
