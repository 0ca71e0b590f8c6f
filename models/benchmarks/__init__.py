"""Benchmark tables shipped with iolake: per configuration, features and measured bandwidths, no traces.

`iosweep.csv` (270 rows) comes from the project's own IOR sweep (`../shared/data/iosweep`: IOR
on a tmpfs "burst buffer" and an ext4 "PFS" of one 2-core VM, 2 repetitions per tier), derived
by `models/benchmarks/derive.py`. It is the default training set when a lake has no two-tier
labels (`models.default_benchmark: iosweep`), so a first run trains, promotes and scores. Its
tiers are not a centre's: a centre should train on its own history (labels from its lake, or
`models.benchmark_table` pointing at its own benchmark).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
SHIPPED = {"iosweep": HERE / "iosweep.csv"}
ABOUT = {  # what each shipped table measured, in the words advice uses (models/provenance.py)
    "iosweep": "the shipped IOR sweep of a 2-core VM (tmpfs vs ext4)",
}
TIERS = ("bb", "pfs")


def resolve(name_or_path: str) -> str:
    """A shipped table's name (`iosweep`) -> its path; anything else is a path, returned as given."""
    return str(SHIPPED[name_or_path]) if name_or_path in SHIPPED else name_or_path


def describe(name_or_path: str) -> str:
    return (
        f"{name_or_path} (shipped: {SHIPPED[name_or_path]})"
        if name_or_path in SHIPPED
        else name_or_path
    )


def cast_like(frame: pd.DataFrame, spec, columns) -> pd.DataFrame:
    """`columns` of `frame` cast to the pandas types Spark gives `spec`'s columns (a CSV's 64 is a
    long where the table holds a double, and the means of long counters are floats): a model's
    signature, inferred from its training rows, must accept the rows `score` reads from the lake."""
    from pyspark.sql import types as T

    out = frame.copy()
    for c in columns:
        if c not in out or c not in spec.struct.fieldNames():
            continue
        t = spec.struct[c].dataType
        if isinstance(t, (T.LongType, T.IntegerType)):
            out[c] = pd.to_numeric(out[c]).round().astype("int64")
        elif isinstance(t, (T.DoubleType, T.FloatType)):
            out[c] = pd.to_numeric(out[c]).astype("float64")
        elif isinstance(t, T.BooleanType):
            out[c] = (
                out[c].map(lambda v: str(v).strip().lower() in ("true", "1", "1.0")).astype(bool)
            )
        elif isinstance(t, T.StringType):
            out[c] = out[c].astype(str)
    return out


def file_rows(pdf: pd.DataFrame) -> pd.DataFrame:
    """Bandwidth-model rows of a benchmark frame: one per (configuration, tier) with a measured
    file bandwidth; columns FEATURES + tier + bandwidth_mib_s + config_id."""
    from schemas.placement_labels import FEATURES

    parts = []
    for t in TIERS:
        col = (
            f"file_bandwidth_mib_s_{t}"
            if f"file_bandwidth_mib_s_{t}" in pdf
            else f"bandwidth_mib_s_{t}"
        )
        part = pdf[[*FEATURES]].assign(
            tier=t, bandwidth_mib_s=pdf[col], config_id=pdf.get("config_id", pdf.index)
        )
        parts.append(part[part.bandwidth_mib_s > 0])
    from schemas import SILVER

    return cast_like(pd.concat(parts, ignore_index=True), SILVER["file_features"], FEATURES)


def job_rows(pdf: pd.DataFrame) -> pd.DataFrame:
    """Per-job bandwidth-model rows: one per (configuration, tier) with a measured job throughput;
    columns JOB_FEATURES + throughput_mib_s + config_id. Empty when the table has no job columns."""
    from models.bandwidth import JOB_FEATURES

    cols = [c for c in JOB_FEATURES if c != "tier"]
    if not all(f"job_{c}" in pdf for c in cols):
        return pd.DataFrame(columns=[*JOB_FEATURES, "throughput_mib_s", "config_id"])
    parts = []
    for t in TIERS:
        if f"job_throughput_mib_s_{t}" not in pdf:
            continue
        part = pdf[[f"job_{c}" for c in cols]].rename(columns=lambda c: c[4:])
        part = part.assign(
            tier=t,
            throughput_mib_s=pdf[f"job_throughput_mib_s_{t}"],
            config_id=pdf.get("config_id", pdf.index),
        )
        parts.append(part[part.throughput_mib_s > 0])
    from schemas import SILVER

    return cast_like(pd.concat(parts, ignore_index=True), SILVER["job_features"], cols)


def reference_params(pdf: pd.DataFrame) -> pd.DataFrame | None:
    """The benchmark's own parameters (`ior_*` columns), for the true-parameter reference model."""
    cols = [c for c in pdf.columns if c.startswith("ior_")]
    return pdf[cols] if cols else None


def reference_rows(rows: pd.DataFrame, pdf: pd.DataFrame) -> pd.DataFrame | None:
    """The benchmark's own parameters and the tier, row for row of its bandwidth rows (`file_rows`,
    `job_rows`, joined on `config_id`): the bandwidth reference's input. None when the benchmark
    has no parameters or a row's configuration has none."""
    params = reference_params(pdf)
    if params is None or "config_id" not in pdf or "config_id" not in rows:
        return None
    per_config = params.assign(config_id=pdf["config_id"]).drop_duplicates("config_id")
    out = rows[["config_id", "tier"]].merge(per_config, on="config_id", how="left")
    return None if out[params.columns].isna().any().any() else out.drop(columns="config_id")
