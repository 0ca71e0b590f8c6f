"""Per-feature agreement of silver/file_features with the true IOR parameters, over the whole sweep.

Ingests every Darshan log and Recorder trace of ../shared/data/iosweep into a scratch lake,
runs the features stage, scores each run's IOR test files against runs.csv
(`features.ground_truth`), and prints the table and the mismatch classes; it also times the
two stages. With `--no-dxt` it also computes the features of the same Darshan logs from counters
alone (the DXT segments left out of bronze/io_ops, as a log written with DXT off decodes) and prints
the Darshan runs' agreement with and without DXT side by side.

    python -m bench.feature_agreement [--sweep DIR] [--lake DIR] [--no-dxt]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.common import parser, result, shared


def main(argv=None) -> int:
    import pandas as pd

    from iolake.config import load_config
    from iolake.lake import read_table
    from iolake.spark import session_from_config
    from jobs import features, ingest
    from schemas import BRONZE, SILVER
    from tests.support.ground_truth import agreement, features_without_dxt, summary

    ap = parser(__spec__.name, __doc__)
    ap.add_argument("--sweep", default=str(shared("iosweep")))
    ap.add_argument("--lake", default=None, help="reuse (or keep) the scratch lake here")
    ap.add_argument(
        "--no-dxt", action="store_true", help="also score features computed without DXT"
    )
    args = ap.parse_args(argv)
    lake = args.lake or tempfile.mkdtemp(prefix="iolake-sweep-") + "/lake"
    conf = load_config("local", overrides={"lake": {"root": lake}})
    spark = session_from_config(conf)
    sweep = Path(args.sweep)
    t0 = time.perf_counter()
    ingest.run(spark, conf, [str(sweep / "darshan"), str(sweep / "recorder")])
    t1 = time.perf_counter()
    features.run(spark, conf)
    t2 = time.perf_counter()
    run_id = r"/([a-z]+_c\d+_(?:r\d|rec))(?:\.darshan)?$"
    ff = read_table(spark, SILVER["file_features"], lake).toPandas()
    led = read_table(spark, BRONZE["logs"], lake).select("log_id", "source_uri").toPandas()
    ff = ff.merge(led, on="log_id")
    ff["run_id"] = ff.source_uri.str.extract(run_id)[0]
    runs = pd.read_csv(sweep / "runs.csv")
    if args.no_dxt:
        bare = features_without_dxt(spark, lake, conf.features)
        bare["run_id"] = bare.source_uri.str.extract(run_id)[0]
        darshan = runs[runs.tracer == "darshan"]
        side = summary(agreement(ff, darshan)).join(
            summary(agreement(bare, darshan)), rsuffix="_no_dxt"
        )
        print("Darshan runs, with DXT and from counters alone (DXT left out):")
        print(side.to_string(float_format="%.1f") + "\n")
    scored = agreement(ff, runs)
    print(summary(scored).to_string())
    bad = (
        scored[~scored.agree]
        .drop_duplicates(["run_id", "feature"])
        .merge(
            runs[["run_id", "tracer", "api", "io_type", "file_per_proc", "collective"]], on="run_id"
        )
    )
    print("\nmismatch classes (runs):")
    print(bad.groupby(["feature", "tracer", "api", "io_type"]).size().to_string())
    print(f"\ningest {t1 - t0:.1f} s, features {t2 - t1:.1f} s, lake {lake}")
    per = summary(scored)
    result(
        "feature_agreement",
        f"{len(per)} features over {scored.run_id.nunique()} runs: runs agreeing "
        f"{per.pct.min():.1f}-{per.pct.max():.1f}% per feature; ingest {t1 - t0:.0f} s, "
        f"features {t2 - t1:.0f} s",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
