"""Ingest commit cost (gates + MERGEs) of this tree against a baseline commit, in one run.

    .venv/bin/python bench/commit_cost.py --base REV --load DIR [DIR ...] --drop DIR [DIR ...]

Both trees ingest the same inputs into lakes of their own, interleaved so that drift on a
shared machine hits both alike:
  load   the first ingest (`--load`: a lake's worth of logs into an empty lake);
  drop   a nightly drop on top of that lake (`--drop`; bench/make_corpus.py --month builds one
         whose jobs all start in one month, as a night's logs do).
Each run is `python -m jobs.ingest` (local[2], gates on) in a fresh process; its per-table
`[commit] T: gate X s, merge Y s` lines give where the time went. Prints wall, decode, gate
and merge seconds per tree and the ratio base/this (above 1: this tree is faster).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMIT = re.compile(r"^\[commit\] (\w+): gate ([\d.]+) s, merge ([\d.]+) s$")
DECODE = re.compile(r"^\[decode\] .* in ([\d.]+) s")


def ingest(tree: Path, inputs: list[str], lake: Path, log: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "jobs.ingest", *inputs, "--lake", str(lake)], cwd=tree, env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    log.write_text(p.stdout + "\n--- stderr ---\n" + p.stderr)
    if p.returncode:
        raise SystemExit(f"ingest in {tree} failed ({p.returncode}); see {log}")
    out = {"wall": wall, "gate": 0.0, "merge": 0.0, "decode": 0.0, "io_ops_gate": 0.0, "io_ops_merge": 0.0}
    for line in p.stdout.splitlines():
        if m := COMMIT.match(line.strip()):
            out["gate"] += float(m[2])
            out["merge"] += float(m[3])
            if m[1] == "io_ops":
                out["io_ops_gate"], out["io_ops_merge"] = float(m[2]), float(m[3])
        elif m := DECODE.match(line.strip()):
            out["decode"] = float(m[1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="baseline git revision (checked out as a worktree)")
    ap.add_argument("--load", nargs="+", required=True, help="inputs of the first ingest")
    ap.add_argument("--drop", nargs="+", required=True, help="inputs of the nightly drop on top")
    ap.add_argument("--work", help="keep lakes and logs here (default: a temporary folder)")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="iolake-commit-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    base = work / "base-tree"
    if not base.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True,
                       capture_output=True)
    trees = {"base": base, "this": ROOT}
    res: dict = {}
    try:
        for phase, inputs in (("load", args.load), ("drop", args.drop)):
            for name, tree in trees.items():
                r = ingest(tree, inputs, work / f"lake-{name}", work / f"{phase}-{name}.log")
                res[(phase, name)] = r
                print(f"{phase:<5} {name:<5} wall {r['wall']:7.1f} s  decode {r['decode']:6.1f}  gates {r['gate']:6.1f}"
                      f"  merges {r['merge']:6.1f}  (io_ops gate {r['io_ops_gate']:.1f}, merge {r['io_ops_merge']:.1f})",
                      flush=True)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)
    print(f"\nratio base/this (above 1: this tree is faster), base = {args.base}")
    for phase in ("load", "drop"):
        b, t = res[(phase, "base")], res[(phase, "this")]
        cells = [f"{k} {b[k] / t[k]:.2f}x" for k in ("wall", "gate", "merge", "io_ops_gate", "io_ops_merge") if t[k] > 0]
        print(f"  {phase:<5} " + ", ".join(cells))
    print(f"lakes and logs under {work}")


if __name__ == "__main__":
    main()
