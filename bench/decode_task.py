"""The decode task of ingest in one process: ms a log of `make_decode_partition` (decode, derived
tables, staging) on the same corpus logs, for one or more source trees, alternating.

    .venv/bin/python bench/decode_task.py CORPUS [--logs 2000] [--rounds 2] [--trees DIR ...] [--profile]

Each tree (default: this one; others e.g. from `git archive REV | tar -x -C DIR`) runs in its own
process with its own code, one Spark-free task over the first `--logs` logs of CORPUS
(`bench/make_corpus.py`), writing its staged Parquet to a scratch folder. What a Spark task adds
(the JVM, the Arrow hand-over) is not in it; two tasks side by side (local[2]) each run ~1.3x
slower than one alone. `--profile` prints the first tree's cProfile instead.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def task(tree: str, corpus: str, n: int, profile: bool) -> float:
    """ms a log of one decode task of `tree`'s code (run in this process: the caller's child)."""
    sys.path.insert(0, tree)
    import pyarrow as pa

    from iolake.config import load_config
    from jobs import ingest_tasks as it

    paths = sorted(str(p) for p in Path(corpus).glob("*/*") if p.is_file())[:n]
    rows = [{"log_id": f"{k:064d}", "source_uri": p, "size_bytes": os.path.getsize(p), "mtime_ns": 0,
             "kind": "darshan"} for k, p in enumerate(paths)]
    conf = load_config("local", conf_dir=Path(tree) / "conf")
    with tempfile.TemporaryDirectory() as stage:
        fn = it.make_decode_partition(conf.ingest, stage, "bench", it.derivers(conf))
        t0 = time.perf_counter()
        if profile:
            import cProfile
            import pstats

            pr = cProfile.Profile()
            pr.enable()
            list(fn([pa.RecordBatch.from_pylist(rows)]))
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(30)
        else:
            list(fn([pa.RecordBatch.from_pylist(rows)]))
        return 1000 * (time.perf_counter() - t0) / len(paths)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--logs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--trees", nargs="*", default=[str(ROOT)])
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(f"{task(args.child, args.corpus, args.logs, args.profile):.3f}")
        return
    best = dict.fromkeys(args.trees, float("inf"))
    for r in range(1 if args.profile else args.rounds):
        for tree in (args.trees if r % 2 == 0 else list(reversed(args.trees)))[: 1 if args.profile else None]:
            out = subprocess.run([sys.executable, __file__, args.corpus, "--logs", str(args.logs), "--child", tree,
                                  *(["--profile"] if args.profile else [])], capture_output=True, text=True,
                                 check=True, env=dict(os.environ, PYTHONPATH=tree)).stdout
            if args.profile:
                print(out)
                return
            ms = float(out.strip().splitlines()[-1])
            best[tree] = min(best[tree], ms)
            print(f"round {r + 1} {tree}: {ms:.2f} ms a log", flush=True)
    first = best[args.trees[0]]
    for tree, ms in best.items():
        print(f"best of {args.rounds}: {tree}: {ms:.2f} ms a log ({ms / first:.2f}x the first)")


if __name__ == "__main__":
    main()
