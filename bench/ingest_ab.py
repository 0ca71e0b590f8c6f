"""The ingest stage of a base commit against this tree's, on the same corpus, in one run.

    python -m bench.ingest_ab BASE_REV CORPUS [--rounds 2] [--base-conf DIR]

BASE_REV is extracted from git into a scratch folder (`git archive`; the native decoder is the
one installed, shared by both); each round ingests CORPUS into a fresh lake with each tree
(`python -m jobs.ingest`, its own JVM, the tree's own conf/), alternating which goes first. It
prints each run's decode seconds (the decode tasks: the work that is per log) and ingest stage
seconds and the files each bronze table holds (the staged files one ingest adds: decision 0052),
then the best of each way and the ratios this / base. Check that the two trees' lakes
hold the same rows with `python -m bench.compare_lakes`. BASE_REV `this` is this tree on both
sides: with `--base-conf DIR` (a copy of conf/ with one setting changed, e.g.
`ingest.commit_threads: 1`), the A/B of a setting rather than of a commit.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from bench.common import ROOT, alternate, checkout, ingest_run, parser, result, scratch


def table_files(lake: Path) -> str:
    """Files (add actions) of the lake's largest bronze tables, e.g. `jobs 33, posix 33`."""
    from deltalake import DeltaTable

    out = []
    for name in ("jobs", "posix", "io_ops"):
        path = lake / "bronze" / name
        if (path / "_delta_log").is_dir():
            out.append(f"{name} {len(DeltaTable(str(path)).get_add_actions())}")
    return ", ".join(out) or "none"


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("base", help="git revision of the base tree")
    ap.add_argument("corpus")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--base-conf", type=Path, help="conf/ folder of the base side")
    args = ap.parse_args(argv)
    with scratch("ingest-ab") as work:
        base = ROOT if args.base == "this" else checkout(args.base, work / "base")
        trees = {"base": base, "this": ROOT}
        confs = {"base": args.base_conf, "this": None}
        decode: dict[str, float] = {}

        def timed(way: str) -> tuple[float, dict]:
            lake = work / f"lake-{way}"
            out = ingest_run([args.corpus], lake, trees[way], confs[way])
            print(
                f"  {way}: decode {out['decode']:.1f} s, ingest stage {out['stage']:.1f} s "
                f"(wall {out['wall']:.1f} s); files a table: {table_files(lake)}",
                flush=True,
            )
            decode[way] = min(decode.get(way, out["decode"]), out["decode"])
            shutil.rmtree(lake)
            return out["stage"], out

        best, _ = alternate(args.rounds, timed)
    (bd, td), (bs, ts) = (decode["base"], decode["this"]), (best["base"], best["this"])
    print(
        f"best of {args.rounds}: decode {bd:.1f} -> {td:.1f} s ({td / bd:.2f}x), "
        f"ingest stage {bs:.1f} -> {ts:.1f} s ({ts / bs:.2f}x)"
    )
    result(
        "ingest_ab",
        f"this / {args.base}: decode {td / bd:.2f}x, ingest stage {ts / bs:.2f}x "
        f"(best of {args.rounds})",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
