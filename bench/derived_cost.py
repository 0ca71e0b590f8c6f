"""Per-log results computed where ingest decodes each log (bronze/covers, op_patterns, phases)
against the silver stages' own Spark passes over every segment, in one run.

    .venv/bin/python bench/derived_cost.py CORPUS [--rounds 2] [--keys covers patterns phases]
                                          [--stages features covering tags]

CORPUS is a folder of Darshan logs (`bench/make_corpus.py`). Each round ingests all of it into two
fresh lakes, with the `ingest.` KEYS true and false (alternating which goes first), each ingest a
`python -m jobs.ingest` in its own JVM, then runs each of STAGES as `iolake stage` on each lake (in
that order: tags needs features). It prints the best round of each way (least total): the decode,
the ingest stage, each stage and their sum, with the ratio true / false. Both lakes' outputs of
the stages must hold the same rows (doubles to 12 significant digits: `same_rows`), or it stops.
(Issue 16's first piece, covers alone, was measured with `--keys covers --stages covering`, the
script's earlier form `covers_cost.py`.)
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
OUTPUTS = {"features": ("file_features", "job_features"), "covering": ("covering_sets",), "tags": ("bottleneck_tags",)}


def rows_of(lake: Path, table: str):
    """silver/TABLE of `lake`, sorted by its keys (through delta-rs)."""
    from iolake.lake import arrow
    from schemas import SILVER

    spec = SILVER[table]
    return arrow.read(str(lake), spec).sort_by([(k, "ascending") for k in spec.keys]).select(spec.columns)


def same_rows(a, b) -> bool:
    """The same rows, doubles to 12 significant digits (ingest's rollups add a record's ranks' times
    in row order, Spark's distinct count of ranks makes it add per-rank sums in its own order)."""
    import pandas as pd

    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    try:
        pd.testing.assert_frame_equal(a.to_pandas(), b.to_pandas(), check_exact=False, rtol=1e-12, atol=0)
    except AssertionError:
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--keys", nargs="+", default=["covers", "patterns", "phases"])
    ap.add_argument("--stages", nargs="+", default=["features", "covering", "tags"], choices=list(OUTPUTS))
    args = ap.parse_args()
    n_logs = sum(1 for p in Path(args.corpus).rglob("*") if p.is_file() and ".darshan" in p.name)
    scratch = Path(tempfile.mkdtemp(prefix="derived-cost-"))
    runs: dict[str, list[dict]] = {w: [] for w in WAYS}
    try:
        confs = {w: conf_dir(scratch, ",".join(args.keys), w) for w in WAYS}
        for r in range(args.rounds):
            kept = {}
            for way in (WAYS if r % 2 == 0 else WAYS[::-1]):
                lake = scratch / f"lake-{way}"
                res = ingest(args.corpus, lake, confs[way])
                for stage in args.stages:
                    res[stage] = stage_seconds(stage, lake)
                runs[way].append(res)
                print(f"round {r + 1} {'/'.join(args.keys)}={way:>5}: ingest {res['stage']:.1f} s (decode "
                      f"{res['decode']:.1f} s), " + ", ".join(f"{s} {res[s]:.1f} s" for s in args.stages), flush=True)
                kept[way] = {t: rows_of(lake, t) for s in args.stages for t in OUTPUTS[s]}
                shutil.rmtree(lake, ignore_errors=True)
            for t, rows in kept["true"].items():
                if not same_rows(rows, kept["false"][t]):
                    raise SystemExit(f"round {r + 1}: the two ways' silver/{t} differ "
                                     f"({rows.num_rows:,} vs {kept['false'][t].num_rows:,} rows)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    def total(x):
        return x["stage"] + sum(x[s] for s in args.stages)

    best = {w: min(rs, key=total) for w, rs in runs.items()}
    on, off = best["true"], best["false"]
    same = ", ".join(f"{t} {rows.num_rows:,}" for t, rows in kept["true"].items())
    print(f"\n{n_logs:,} logs, best of {args.rounds} rounds per way; the same rows both ways ({same})")
    keys = ", ".join(f"`{k}`" for k in args.keys)
    print(f"| | Spark passes ({keys} false) | at ingest ({keys} true) | ratio |")
    print("|---|---|---|---|")
    for label, key in (("decode", "decode"), ("ingest stage", "stage"), *((f"{s} stage", s) for s in args.stages)):
        print(f"| {label} | {off[key]:.1f} s | {on[key]:.1f} s | {on[key] / off[key]:.2f} |")
    a, b = total(off), total(on)
    print(f"| ingest + {' + '.join(args.stages)} | {a:.1f} s ({1000 * a / n_logs:.1f} ms a log) | {b:.1f} s "
          f"({1000 * b / n_logs:.1f} ms a log) | {b / a:.2f} |")


if __name__ == "__main__":
    main()
