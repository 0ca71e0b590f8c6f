"""Every table of the lake, declared once. `TABLES[name]` is its `TableSpec`."""

from schemas import (
    app_runs,
    autoperf,
    bandwidth_predictions,
    bottleneck_tags,
    covering_sets,
    covers,
    empty_logs,
    file_features,
    file_rollups,
    files,
    fleet_app_month,
    fleet_done,
    fleet_drift,
    fleet_fs_day,
    fleet_health,
    fleet_tag_cost,
    heatmap,
    io_ops,
    job_bandwidth_predictions,
    job_features,
    jobs,
    logs,
    op_patterns,
    phases,
    placement_labels,
    placement_predictions,
    regressions,
    runs,
    tuning_advice,
)
from schemas._spec import INGEST_COLUMNS, Expectation, TableSpec, arrow_schema
from schemas.modules import DARSHAN_MODULE_TABLE, LUSTRE_SPEC, MODULE_SPECS

BRONZE: dict[str, TableSpec] = {
    "logs": logs.SPEC,
    "jobs": jobs.SPEC,
    "files": files.SPEC,
    **MODULE_SPECS,
    "lustre": LUSTRE_SPEC,
    "heatmap": heatmap.SPEC,
    "apmpi": autoperf.APMPI_SPEC,
    "apxc": autoperf.APXC_SPEC,
    "io_ops": io_ops.SPEC,
    # derived from a log's decoded tables where ingest decodes it, not decoded (their docs)
    "covers": covers.SPEC,
    "op_patterns": op_patterns.SPEC,
    "phases": phases.SPEC,
    "file_rollups": file_rollups.SPEC,
}

# The tables ingest derives from a log's decoded tables (per-log results of a silver stage).
DERIVED_TABLES: tuple[str, ...] = ("covers", "op_patterns", "phases", "file_rollups")

# The tables ingest fills for one log (everything in bronze but the ledger: what the decoder read,
# and DERIVED_TABLES, computed from it).
DECODED_TABLES: tuple[str, ...] = tuple(t for t in BRONZE if t != "logs")

SILVER: dict[str, TableSpec] = {
    "file_features": file_features.SPEC,
    "job_features": job_features.SPEC,
    "covering_sets": covering_sets.SPEC,
    "bottleneck_tags": bottleneck_tags.SPEC,
}

GOLD: dict[str, TableSpec] = {
    "placement_labels": placement_labels.SPEC,
    "placement_predictions": placement_predictions.SPEC,
    "bandwidth_predictions": bandwidth_predictions.SPEC,
    "job_bandwidth_predictions": job_bandwidth_predictions.SPEC,
    "app_runs": app_runs.SPEC,
    "regressions": regressions.SPEC,
    "tuning_advice": tuning_advice.SPEC,
    # the fleet marts (jobs/fleet.py), read by `iolake fleet`
    "fleet_app_month": fleet_app_month.SPEC,
    "fleet_tag_cost": fleet_tag_cost.SPEC,
    "fleet_fs_day": fleet_fs_day.SPEC,
    "fleet_health": fleet_health.SPEC,
    "fleet_drift": fleet_drift.SPEC,
}

# About the pipeline itself, not the traces (`LAKE/ops/`).
OPS: dict[str, TableSpec] = {
    "runs": runs.SPEC,
    "empty_logs": empty_logs.SPEC,
    "fleet_done": fleet_done.SPEC,
}

TABLES: dict[str, TableSpec] = {**BRONZE, **SILVER, **GOLD, **OPS}

__all__ = [
    "BRONZE",
    "DARSHAN_MODULE_TABLE",
    "DECODED_TABLES",
    "DERIVED_TABLES",
    "INGEST_COLUMNS",
    "SILVER",
    "Expectation",
    "GOLD",
    "OPS",
    "TABLES",
    "TableSpec",
    "arrow_schema",
]
