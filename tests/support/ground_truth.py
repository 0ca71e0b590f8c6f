"""Compare extracted file features with the IOR parameters that produced a run (the iosweep data).

`agreement(file_features, runs)` takes pandas frames — silver/file_features rows joined to their
ledger `source_uri`, and `runs.csv` — and returns one row per (run, feature) with the truth, the
extracted value and whether they agree. A feature is only scored where a log can reveal it
(`REVEALED`): write-side flags on runs that write, MPI-IO flags on MPI-IO runs, and so on.
"""

from __future__ import annotations

import pandas as pd

API = {"POSIX": "POSIX", "MPIIO": "MPI-IO", "HDF5": "HDF5"}

# feature: (runs.csv column, file_features column, how to compare)
FEATURES = {
    "interface": ("api", "interface", lambda t, x: API[t] == x),
    "nprocs": ("nprocs", "nprocs", lambda t, x: int(t) == int(x)),
    "io_type": ("io_type", "io_type", lambda t, x: t == x),
    "file_per_process": ("file_per_proc", "file_per_process", lambda t, x: bool(t) == bool(x)),
    "unique_dir": ("unique_dir", "unique_dir", lambda t, x: bool(t) == bool(x)),
    "collective": ("collective", "collective", lambda t, x: bool(t) == bool(x)),
    "file_view": ("use_file_view", "file_view", lambda t, x: bool(t) == bool(x)),
    "fsync": ("fsync", "fsync", lambda t, x: bool(t) == bool(x)),
    "fsync_per_write": ("fsync_per_write", "fsync_per_write", lambda t, x: bool(t) == bool(x)),
    "preallocate": ("preallocate", "preallocate", lambda t, x: bool(t) == bool(x)),
    "random_access": ("random_offset", "random_access", lambda t, x: bool(t) == bool(x)),
    "transfer_size": ("transfer_size", "transfer_size", lambda t, x: int(t) == int(x)),
    "rw_per_open": (
        "xfers_per_open_close",
        "rw_per_open",
        lambda t, x: abs(float(x) - float(t)) <= 0.05 * float(t),
    ),
}


def revealed(feature: str, run: pd.Series) -> bool:
    writes = run["num_write_passes"] > 0
    if feature in ("fsync", "preallocate"):
        return bool(writes) and (feature != "preallocate" or run["api"] == "MPIIO")
    if feature == "fsync_per_write":
        return bool(writes) and run["api"] == "POSIX"
    if feature == "file_view":
        return run["api"] == "MPIIO"
    if feature == "unique_dir":
        return bool(run["file_per_proc"])
    return True


def ior_files(ff: pd.DataFrame) -> pd.DataFrame:
    """The rows of IOR's test files (one shared file, or one per rank)."""
    return ff[ff.file_name.fillna("").str.contains(r"/ior_testfile(\.\d+)?$", regex=True)]


def agreement(ff: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """ff: file_features + `run_id` column. One row per (run, feature, file) scored."""
    ff = ior_files(ff).merge(runs, on="run_id", suffixes=("", "_true"))
    rows = []
    for _, r in ff.iterrows():
        for feat, (tcol, xcol, same) in FEATURES.items():
            if not revealed(feat, r):
                continue
            truth = r[f"{tcol}_true"] if f"{tcol}_true" in r else r[tcol]
            got = r[xcol]
            ok = (
                got is not None
                and not (isinstance(got, float) and pd.isna(got))
                and bool(same(truth, got))
            )
            rows.append(
                {
                    "run_id": r["run_id"],
                    "file_name": r["file_name"],
                    "feature": feat,
                    "truth": truth,
                    "extracted": got,
                    "agree": ok,
                }
            )
    return pd.DataFrame(rows)


def summary(scored: pd.DataFrame) -> pd.DataFrame:
    per_run = scored.groupby(["feature", "run_id"]).agree.all().reset_index()
    return per_run.groupby("feature").agree.agg(
        runs="size", agree="sum", pct=lambda s: 100.0 * s.mean()
    )


def features_without_dxt(spark, lake: str, fconf) -> pd.DataFrame:
    """silver/file_features as the features stage computes them for the same logs without DXT: the
    lake's bronze tables with the DXT segments left out of bronze/io_ops (Recorder's ops kept), which
    is what a log written with DXT off decodes to. Joined to the ledger's `source_uri`."""
    import pyspark.sql.functions as F

    from features import file_features
    from iolake.lake import read_table, table_exists
    from schemas import BRONZE

    tables = {}
    for name in ("jobs", "files", "posix", "mpiio", "stdio", "h5f", "h5d", "lustre", "io_ops"):
        spec = BRONZE[name]
        tables[name] = (
            read_table(spark, spec, lake)
            if table_exists(spark, spec, lake)
            else spark.createDataFrame([], spec.struct)
        )
    tables["io_ops"] = tables["io_ops"].where(~F.col("source").startswith("DXT_"))
    ff = file_features.transform(tables, fconf).toPandas()
    led = read_table(spark, BRONZE["logs"], lake).select("log_id", "source_uri").toPandas()
    return ff.merge(led, on="log_id")
