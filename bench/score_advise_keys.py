"""The score and advise stages' model work once per file (before) against once per distinct model input (now).

    .venv/bin/python bench/score_advise_keys.py LAKE [--rounds 2] [--repeat 1] [--conf-dir DIR]

On one lake, in one run: advise's what-if (`features/advice.what_if_rows` over every data file with
a transfer size, as the advise stage's first run sees them) and score's two per-file models
(`jobs/score.predict` over every data file, cached as the stage caches them, as a first score),
each both ways: `per_key=False`
(the search or model call per file) and `per_key=True` (per distinct key, joined back:
`iolake/per_key.py`). Each run builds the frame, caches and counts it, as the stages do before
writing; the ways alternate over `--rounds` (old first in odd rounds), after one untimed per-key
run of each part (Python workers and models loaded). Prints every run's seconds, the best of each
way, new/old, the files and distinct keys, and checks the last rows of both ways identical (every
column but `scored_at`, floats exactly, maps as sorted entries). Uses the lake's champions
(`models.alias`) from its MLflow registry; reads the lake, writes nothing to it.

`--repeat N` stacks the lake's files N times under N log ids (`LOG-k`): the files of a lake N times
larger with this lake's keys (the 100,000-log lake had 671 keys for 471,764 files, about as few
as the 10,000-log lake's 941 for 49,055), without building it.

Times the changed piece only: a stage also reads its inputs, writes Delta, and (advise) assembles
the stripe and tag rows, which cost the same both ways.
"""
from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed_run(build) -> tuple[float, object]:
    """(seconds to build, cache and count the frame; the cached frame)."""
    t0 = time.perf_counter()
    df = build().cache()
    df.count()
    return time.perf_counter() - t0, df


def comparable(df, drop=("scored_at",)):
    """`df` without `drop`, maps as arrays of entries sorted by key (set operations refuse maps)."""
    import pyspark.sql.functions as F
    from pyspark.sql import types as T

    cols = [F.array_sort(F.map_entries(f.name)).alias(f.name) if isinstance(f.dataType, T.MapType) else F.col(f.name)
            for f in df.schema.fields if f.name not in drop]
    return df.select(*cols)


def differences(old, new) -> tuple[int, int]:
    """(rows only in old, rows only in new), duplicates counted."""
    a, b = comparable(old), comparable(new)
    return a.exceptAll(b).count(), b.exceptAll(a).count()


def race(part: str, build, rounds: int) -> dict:
    """Alternate `build(per_key)` over `rounds`; best seconds per way and the row check."""
    build(True).count()  # untimed: Python workers started, models loaded
    runs, last = {"old": [], "new": []}, {}
    for k in range(rounds):
        for way in (("old", "new") if k % 2 == 0 else ("new", "old")):
            if way in last:
                last.pop(way).unpersist()
            seconds, last[way] = timed_run(lambda: build(way == "new"))
            runs[way].append(seconds)
            print(f"  {part} round {k + 1} {way}: {seconds:.1f} s", flush=True)
    only_old, only_new = differences(last["old"], last["new"])
    rows = last["new"].count()
    for df in last.values():
        df.unpersist()
    return {"old": min(runs["old"]), "new": min(runs["new"]), "runs": runs, "rows": rows,
            "only_old": only_old, "only_new": only_new}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lake", help="lake root (read only)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of old and new, alternating (default 2)")
    ap.add_argument("--repeat", type=int, default=1, help="stack the lake's files this many times (default 1)")
    ap.add_argument("--conf-dir", type=Path, help="configuration folder (default conf/)")
    args = ap.parse_args()

    import pyspark.sql.functions as F
    from pyspark.sql import DataFrame

    from features import advice, what_if
    from features.placement_labels import data_files
    from iolake.config import load_config
    from iolake.lake import read_table
    from iolake.spark import session_from_config
    from jobs.score import predict, signature_columns
    from models import tracking
    from models.registry import version_by_alias
    from schemas import GOLD, SILVER

    conf = load_config("local", args.conf_dir, overrides={"lake": {"root": args.lake}})
    spark = session_from_config(conf)
    tracking.configure(conf)
    m = conf.models
    bw_mv = version_by_alias(m.bandwidth_model, m.alias)
    pl_mv = version_by_alias(m.placement_model, m.alias)
    ff = read_table(spark, SILVER["file_features"], args.lake)
    if args.repeat > 1:
        ff = functools.reduce(DataFrame.unionByName, [ff.withColumn("log_id", F.concat("log_id", F.lit(f"-{k}")))
                                                      for k in range(args.repeat)])
    data = data_files(ff, need_bandwidth=False)
    files = data.where(F.col("transfer_size") > 0)  # as advise.assemble: read from the lake, not cached
    scored = data.cache()  # as score._score_one: its files to score, cached and counted first
    scored.count()

    space = what_if.Space.from_conf(conf.advise, advice.model_tiers(bw_mv) or what_if.Space().tiers)
    bw = advice.ship_model(spark, f"models:/{bw_mv.name}/{bw_mv.version}")
    pl = (advice.ship_model(spark, f"models:/{pl_mv.name}/{pl_mv.version}")
          if conf.advise.tier_from == "placement" else None)
    parts = {"advise what-if": (lambda per_key: advice.what_if_rows(files, space, bw, pl, per_key=per_key),
                                files, advice.KEY)}
    for mv, table in ((pl_mv, "placement_predictions"), (bw_mv, "bandwidth_predictions")):
        uri = f"models:/{mv.name}/{mv.version}"
        parts[f"score {table}"] = (
            lambda per_key, uri=uri, mv=mv, table=table: predict(spark, scored, uri, mv.name, str(mv.version),
                                                                 GOLD[table], per_key),
            scored, signature_columns(uri))

    stacked = f" (files x{args.repeat})" if args.repeat > 1 else ""
    print(f"lake {args.lake}{stacked}: bandwidth champion v{bw_mv.version}, placement champion v{pl_mv.version}; "
          f"advise.tier_from {conf.advise.tier_from}, dimensions {list(space.dimensions)}", flush=True)
    results = {}
    for part, (build, rows, key) in parts.items():
        n_rows, n_keys = rows.count(), rows.select(*key).distinct().count()
        print(f"{part}: {n_rows:,} files, {n_keys:,} distinct keys ({len(key)} columns)", flush=True)
        results[part] = {**race(part, build, args.rounds), "files": n_rows, "keys": n_keys}

    print("\n| part | files | distinct keys | per file (old) | per key (new) | new/old | rows identical |")
    print("|---|---|---|---|---|---|---|")
    failed = False
    for part, r in results.items():
        same = r["only_old"] == 0 and r["only_new"] == 0 and r["rows"] == r["files"]
        failed |= not same
        check = "yes" if same else f"NO: {r['only_old']} only old, {r['only_new']} only new, {r['rows']} rows"
        print(f"| {part} | {r['files']:,} | {r['keys']:,} | {r['old']:.1f} s | {r['new']:.1f} s | "
              f"{r['new'] / r['old']:.3f} | {check} |")
    total_old = sum(r["old"] for r in results.values())
    total_new = sum(r["new"] for r in results.values())
    print(f"| all three | | | {total_old:.1f} s | {total_new:.1f} s | {total_new / total_old:.3f} | |")
    spark.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
