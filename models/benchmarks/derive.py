"""Derive the shipped IOR-sweep benchmark table from a lake that ingested the sweep's Darshan logs.

    python -m apps.benchmark_table LAKE LABELS_CSV [OUT]

reads the lake's tables and hands them to `derive` here, which works on pandas frames alone.
LAKE: a lake where `iolake run` (ingest + features) read `iosweep/darshan/`; LABELS_CSV: the
sweep's `labels.csv` (per configuration: IOR parameters, per-tier IOR bandwidth, `best_tier`).
Writes one row per labelled configuration (default OUT: `models/benchmarks/iosweep.csv`):

- the placement features (`schemas.placement_labels.FEATURES`) *as the traces reveal them*: the
  most common value over the configuration's data files on both tiers, so a model trained on
  the table reads the same columns `silver/file_features` holds for any lake file;
- `bandwidth_mib_s_<tier>`, `bandwidth_std_<tier>`, `files_<tier>`: IOR's own effective bandwidth
  per tier (mean, std, repetitions: labels.csv), the PrismIO §V label source;
  `read_/write_bandwidth_mib_s_<tier>` likewise;
- `file_bandwidth_mib_s_<tier>`: the mean Darshan file bandwidth of the data files on the tier
  (what `silver/file_features` measures, the bandwidth models' target);
- `job_<feature>` (`models.bandwidth.JOB_NUMERIC`, `seq_pct`: mean over the runs) and
  `job_throughput_mib_s_<tier>` (silver/job_features; the tier the sweep ran the job on) for the
  per-job bandwidth model;
- `best_tier`, `label_margin_gt_std`: the sweep's labels; `ior_<param>`: the true IOR parameters
  (only the true-parameter reference model reads them).

No trace, path or time is kept: features and measured bandwidths only.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

OUT = Path(__file__).with_name("iosweep.csv")
TIERS = ("bb", "pfs")
IOR_PARAMS = (
    "api",
    "nprocs",
    "io_type",
    "file_per_proc",
    "collective",
    "fsync",
    "fsync_per_write",
    "preallocate",
    "use_file_view",
    "unique_dir",
    "random_offset",
    "transfer_size",
    "block_size",
    "segments",
    "xfers_per_open_close",
)


def _mode(s: pd.Series):
    return s.mode().iloc[0]


def derive(
    ff: pd.DataFrame, logs: pd.DataFrame, jf: pd.DataFrame, labels: pd.DataFrame
) -> pd.DataFrame:
    """The benchmark table from pandas frames of silver/file_features, bronze/logs, silver/job_features."""
    from models.bandwidth import JOB_NUMERIC
    from schemas.placement_labels import FEATURES

    rid = logs.source_uri.str.extract(r"((bb|pfs)_c(\d+)_r\d+)\.darshan$")
    logs = logs.assign(run_id=rid[0], run_tier=rid[1], config_id=pd.to_numeric(rid[2])).dropna(
        subset=["run_id"]
    )
    logs = logs[logs.status == "ok"][["log_id", "run_id", "run_tier", "config_id"]]
    files = ff.merge(logs, on="log_id")
    files = files[
        (files.reads + files.writes > 0)
        & (files.interface != "STDIO")
        & (files.bandwidth_mib_s > 0)
    ]
    feats = (
        files.sort_values(["config_id", "run_id", "record_id"])
        .groupby("config_id")[list(FEATURES)]
        .agg(_mode)
    )
    fbw = files.groupby(["config_id", "tier"]).bandwidth_mib_s.mean().unstack()
    jobs = jf.merge(logs, on="log_id")
    jcols = [*JOB_NUMERIC, "seq_pct"]
    jmean = jobs.groupby("config_id")[jcols].mean().add_prefix("job_")
    jbw = jobs.groupby(["config_id", "run_tier"]).throughput_mib_s.mean().unstack()

    lab = labels.set_index("config_id")
    out = feats.join(lab[[]], how="inner")
    for t in TIERS:
        out[f"bandwidth_mib_s_{t}"] = lab[f"eff_bw_mean_{t}"]
        out[f"bandwidth_std_{t}"] = lab[f"eff_bw_std_{t}"]
        out[f"files_{t}"] = lab[f"n_reps_{t}"]
        out[f"read_bandwidth_mib_s_{t}"] = lab[f"read_bw_mean_{t}"]
        out[f"write_bandwidth_mib_s_{t}"] = lab[f"write_bw_mean_{t}"]
        out[f"file_bandwidth_mib_s_{t}"] = fbw.get(t)
        out[f"job_throughput_mib_s_{t}"] = jbw.get(t)
    out = out.join(jmean)
    out["best_tier"] = lab["best_tier"]
    out["label_margin_gt_std"] = lab["label_margin_gt_std"].astype(bool)
    for p in IOR_PARAMS:
        out[f"ior_{p}"] = lab[p]
    return out.reset_index().sort_values("config_id")
