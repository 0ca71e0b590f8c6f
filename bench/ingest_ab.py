"""The ingest stage of a base commit against this tree's, on the same corpus, in one run.

    .venv/bin/python bench/ingest_ab.py BASE_REV CORPUS [--rounds 2]

BASE_REV is checked out from git into a scratch folder (`git archive`; the native decoder is the
one installed, shared by both); each round ingests CORPUS
into a fresh lake with each tree (`python -m jobs.ingest`, its own JVM, the tree's own conf/),
alternating which goes first. It prints each run's decode seconds (the decode tasks: the work
that is per log) and ingest stage seconds, then the best of each way and the ratios this / base.
Check that the two trees' lakes hold the same rows with `bench/compare_lakes.py`.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_commit import ROOT, ingest  # noqa: E402  (bench/ is on sys.path when run as a script)


def snapshot(rev: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("corpus")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="ingest-ab-"))
    try:
        trees = {"base": snapshot(args.base, scratch / "base"), "this": ROOT}
        best = {w: (float("inf"), float("inf")) for w in trees}
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for way in order:
                lake = scratch / f"lake-{way}"
                out = ingest(args.corpus, lake, trees[way] / "conf", tree=trees[way])
                decode, stage = out["decode"], out["stage"]
                print(f"round {r + 1} {way}: decode {decode:.1f} s, ingest stage {stage:.1f} s "
                      f"(wall {out['wall']:.1f} s)", flush=True)
                best[way] = (min(best[way][0], decode), min(best[way][1], stage))
                shutil.rmtree(lake)
        (bd, bs), (td, ts) = best["base"], best["this"]
        print(f"best of {args.rounds}: decode {bd:.1f} -> {td:.1f} s ({td / bd:.2f}x), "
              f"ingest stage {bs:.1f} -> {ts:.1f} s ({ts / bs:.2f}x)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
