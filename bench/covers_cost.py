"""Covering sets computed where ingest decodes each log (bronze/covers) against the covering stage's
own Spark pass over every segment, in one run.

    .venv/bin/python bench/covers_cost.py CORPUS [--rounds 2]

CORPUS is a folder of Darshan logs (`bench/make_corpus.py`). Each round ingests all of it into two
fresh lakes, `ingest.covers: true` and `false` (alternating which goes first), each ingest a
`python -m jobs.ingest` in its own JVM, then runs `iolake stage covering` on each lake. It prints
the best round of each way: the decode, the ingest stage, the covering stage and their sum, with
the ratio true / false; both lakes' silver/covering_sets must hold the same rows, or it stops.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_commit import conf_dir, ingest  # noqa: E402  (bench/ is on sys.path when run as a script)
from layout_cost import stage_seconds  # noqa: E402

WAYS = ("true", "false")


def covers_of(lake: Path):
    """silver/covering_sets of `lake`, sorted by its keys (through delta-rs)."""
    from iolake.lake import arrow
    from schemas import SILVER

    spec = SILVER["covering_sets"]
    return arrow.read(str(lake), spec).sort_by([(k, "ascending") for k in spec.keys]).select(spec.columns)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    n_logs = sum(1 for p in Path(args.corpus).rglob("*") if p.is_file() and ".darshan" in p.name)
    scratch = Path(tempfile.mkdtemp(prefix="covers-cost-"))
    runs: dict[str, list[dict]] = {w: [] for w in WAYS}
    try:
        confs = {w: conf_dir(scratch, "covers", w) for w in WAYS}
        for r in range(args.rounds):
            kept = {}
            for way in (WAYS if r % 2 == 0 else WAYS[::-1]):
                lake = scratch / f"lake-{way}"
                res = ingest(args.corpus, lake, confs[way])
                res["covering"] = stage_seconds("covering", lake)
                runs[way].append(res)
                print(f"round {r + 1} covers={way:>5}: ingest {res['stage']:.1f} s (decode {res['decode']:.1f} s), "
                      f"covering {res['covering']:.1f} s", flush=True)
                kept[way] = covers_of(lake)
                shutil.rmtree(lake, ignore_errors=True)
            if not kept["true"].equals(kept["false"]):
                raise SystemExit(f"round {r + 1}: the two ways' silver/covering_sets differ "
                                 f"({kept['true'].num_rows:,} vs {kept['false'].num_rows:,} rows)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    best = {w: min(rs, key=lambda x: x["stage"] + x["covering"]) for w, rs in runs.items()}
    on, off = best["true"], best["false"]
    print(f"\n{n_logs:,} logs, best of {args.rounds} rounds per way; silver/covering_sets identical "
          f"({kept['true'].num_rows:,} rows)")
    print("| | Spark pass (`covers: false`) | at ingest (`covers: true`) | ratio |")
    print("|---|---|---|---|")
    for label, key in (("decode", "decode"), ("ingest stage", "stage"), ("covering stage", "covering")):
        print(f"| {label} | {off[key]:.1f} s | {on[key]:.1f} s | {on[key] / off[key]:.2f} |")
    a, b = off["stage"] + off["covering"], on["stage"] + on["covering"]
    print(f"| ingest + covering | {a:.1f} s ({1000 * a / n_logs:.1f} ms a log) | {b:.1f} s "
          f"({1000 * b / n_logs:.1f} ms a log) | {b / a:.2f} |")


if __name__ == "__main__":
    main()
