"""`iolake predict TRACE...`: a per-file placement plan (PrismIO Fig. 9) for logs not in the lake.

Each Darshan log is decoded (`readers.darshan.decode_darshan`) into bronze-shaped frames on a
local Spark session, featured by the same transform as the `features` stage, and its data files
are scored by the champions of the registry: predicted tier, its probability, and the predicted
bandwidth on that tier.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd


def bronze_frames(spark, path: str, decoder: str = "native") -> dict:
    """Bronze DataFrames of one log (every table of `DECODED_TABLES`, empty when the log lacks it)."""
    import pyarrow as pa

    from readers.darshan import decode_darshan
    from schemas import BRONZE, DECODED_TABLES

    decoded = decode_darshan(path, decoder)
    log_id = hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()
    out = {}
    for name in DECODED_TABLES:
        spec = BRONZE[name]
        tbl = decoded.get(name)
        if tbl is None or tbl.num_rows == 0:
            out[name] = spark.createDataFrame([], spec.struct)
            continue
        n = tbl.num_rows
        tbl = tbl.append_column("log_id", pa.array([log_id] * n)).append_column(
            "job_month", pa.array(["predict"] * n)
        )
        out[name] = spark.createDataFrame(tbl.select(spec.columns).cast(spec.arrow_schema))
    return out


def features(spark, paths, conf) -> pd.DataFrame:
    """silver/file_features rows (pandas) of the data files of the given logs."""
    import pyspark.sql.functions as F

    from features import file_features

    frames = []
    for p in paths:
        ff = file_features.transform(bronze_frames(spark, p, conf.ingest.decoder), conf.features)
        ff = ff.where((F.col("reads") + F.col("writes") > 0) & (F.col("interface") != "STDIO"))
        frames.append(ff.toPandas().assign(trace=str(p)))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def plan(ff: pd.DataFrame, conf) -> pd.DataFrame:
    """Per file: predicted tier, probability, predicted bandwidth on that tier (MiB/s); and, from the
    bandwidth model alone, the bandwidth on the file's current tier, the fastest tier and the speed-up."""
    from models import registry, tracking

    tracking.configure(conf)
    pv, placement = registry.load(conf.models.placement_model, conf.models.alias)
    bv, bandwidth = registry.load(conf.models.bandwidth_model, conf.models.alias)
    p = placement.predict(ff)
    on_pick = ff.assign(tier=p["predicted_tier"].to_numpy())
    b = bandwidth.predict(on_pick)
    now = bandwidth.predict(
        ff
    )  # on the tier each file is on now: every tier's prediction and the speed-up
    out = pd.DataFrame(
        {
            "trace": ff["trace"],
            "file": ff["file_name"],
            "interface": ff["interface"],
            "io_type": ff["io_type"],
            "current_tier": ff["tier"],
            "predicted_tier": p["predicted_tier"],
            "probability": p["probability"].round(3),
            "predicted_bandwidth_mib_s": b["predicted_bandwidth_mib_s"].round(1),
        }
    )
    if "speedup" in now:  # versions trained before per-tier predictions lack it
        out = out.assign(
            bandwidth_now_mib_s=now["predicted_bandwidth_mib_s"].round(1).to_numpy(),
            fastest_tier=now["best_tier"].to_numpy(),
            speedup=now["speedup"].round(2).to_numpy(),
        )
    return out.assign(
        models=f"{conf.models.placement_model} v{pv.version}, {conf.models.bandwidth_model} v{bv.version}"
    )


def main(conf, traces) -> int:
    from iolake.spark import build_session

    spark = build_session(
        "iolake-predict",
        "local[1]",
        {**conf.spark.properties, "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"},
    )
    ff = features(spark, traces, conf)
    if ff.empty:
        print("iolake predict: no file with reads or writes in the given traces")
        return 0
    out = plan(ff, conf)
    print(f"placement plan ({out.models.iloc[0]}):")
    print(out.drop(columns="models").to_string(index=False))
    return 0
