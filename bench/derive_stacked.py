"""The rules ingest derives on a staged file's logs at once (bronze/op_patterns, bronze/phases,
bronze/file_rollups) against a log at a time, in one process, on the same decoded logs.

    .venv/bin/python bench/derive_stacked.py CORPUS [--logs 2000] [--per-file 500] [--rounds 3]

CORPUS is a folder of Darshan logs in dNNNN/ sub-folders (`bench/make_corpus.py`). The first `--logs`
logs are decoded once (native decoder, not timed); then, alternating the two ways `--rounds` times,
each rule runs on every log's tables one by one (`Deriver.per_log`, what a decode task did before) and
on groups of `--per-file` logs stacked (`derive_stacked`, what a decode task does when it stages a
file). It prints ms per log of each way (best round), their ratio, and checks that both give the same
rows per log.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    from iolake.config import load_config
    from jobs import ingest_tasks
    from readers.sandbox import decode_in_process

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--logs", type=int, default=2000)
    ap.add_argument("--per-file", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    paths = sorted(p for p in Path(args.corpus).glob("*/*") if p.is_file())[: args.logs]
    derive = ingest_tasks.derivers(load_config("local"))
    parts = []  # (log_id, {table: rows}), as a decode task holds them
    for k, p in enumerate(paths):
        tables = decode_in_process(str(p), "native").all_tables()
        parts.append((f"{k:064d}", {t: ingest_tasks.as_decoded(t, r) for t, r in tables.items() if r.num_rows}))
    print(f"{len(paths):,} logs decoded ({sum(t.get('io_ops', t['jobs']).num_rows for _, t in parts if 'io_ops' in t):,} "
          f"segments); rules: {', '.join(derive)}")

    def one_by_one():
        return {name: [d(t) for _, t in parts] for name, d in derive.items()}

    def stacked():
        out = {}
        for a in range(0, len(parts), args.per_file):
            chunk = parts[a:a + args.per_file]
            tables: dict = {}
            for i, own in chunk:
                for t, rows in own.items():
                    tables.setdefault(t, []).append((i, rows))
            entries = {i: {"row_counts": [], "notes": None} for i, _ in chunk}
            for name, got in ingest_tasks.derive_stacked([i for i, _ in chunk], tables, derive, entries).items():
                out.setdefault(name, []).append(got)
        return out

    best = {"one by one": float("inf"), "stacked": float("inf")}
    for r in range(args.rounds):
        for way, fn in (("one by one", one_by_one), ("stacked", stacked))[:: 1 if r % 2 == 0 else -1]:
            t0 = time.perf_counter()
            res = fn()
            best[way] = min(best[way], time.perf_counter() - t0)
            if way == "one by one":
                single = res
            else:
                many = res
    n = len(paths)
    for way, s in best.items():
        print(f"  {way:<11} {1000 * s / n:6.3f} ms a log (best of {args.rounds})")
    print(f"  stacked / one by one: {best['stacked'] / best['one by one']:.3f}")
    for name in derive:  # the same rows per log
        rows = pa.concat_tables([t for t, _ in many.get(name, [])]) if many.get(name) else None
        ids = pa.concat_arrays([i for _, i in many.get(name, [])]) if many.get(name) else None
        for (log_id, _), want in zip(parts, single[name]):
            got = rows.filter(pc.equal(ids, log_id)) if rows is not None else want.slice(0, 0)
            assert got.schema == want.schema and got.to_pylist().__repr__() == want.to_pylist().__repr__(), (name, log_id)
    print("  same rows per log: yes")


if __name__ == "__main__":
    main()
