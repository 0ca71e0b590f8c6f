"""`iolake maintain`: keep the lake's Delta tables fast and small.

For every table of `schemas.TABLES` the lake holds (or only `--table NAME`):

0. Table properties: a property its `TableSpec` declares that the table lacks or holds with
   another value (a table created by an older version; e.g. `io_ops`'s
   `delta.dataSkippingStatsColumns`) is set with ALTER TABLE … SET TBLPROPERTIES, and printed.
   Properties the spec does not declare are left alone, and so are the `iolake.` ones: they
   record what a table has been through (bronze/logs' `iolake.ledger.jobidFilled`, set by the
   ingest that filled it), not how it is configured.
1. OPTIMIZE: compact small files (nightly ingests leave one or more files per run and
   partition) and Z-ORDER BY the columns analysts filter by (`TableSpec.zorder_columns`:
   e.g. `log_id, record_id` for the counter tables, `log_id, jobid, exe` for `jobs`; a partition
   column is never Z-ordered). Tables without Z-order columns are only compacted. A table
   looked up by one column (`TableSpec.sorted_by`: bronze/logs by `log_id`) is instead
   rewritten sorted by it in small row groups through delta-rs (iolake/lake/layout.py): a
   look-up of one log then reads one row group, where Spark's Z-order leaves every row group
   spanning every log_id.
2. VACUUM RETAIN `maintain.vacuum_retention_hours` HOURS: delete files no table version within
   the retention references. Delta's retention check stays on; a retention below Delta's safety
   limit is a configuration error unless `maintain.allow_short_retention: true`, and then the check
   is lifted for that VACUUM only, with a warning line.
3. Stats from `DESCRIBE DETAIL` and the table: version, files before/after, rows, bytes, partitions.

`--dry-run` runs `VACUUM ... DRY RUN` (lists what would be deleted), no OPTIMIZE, and only
prints the properties it would set.
Every commit carries the usual `userMetadata` (run id, git sha, config digest; stage `maintain`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from iolake.config import DELTA_RETENTION_SAFETY_HOURS, Config, ConfigError
from iolake.lake.delta import USER_METADATA
from schemas import TABLES, TableSpec

RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
STATE_PROPERTY = "iolake."  # table properties that record state: never synced from the spec


@dataclass
class TableReport:
    table: str  # layer/name
    path: str
    zorder_by: list[str]
    version_before: int
    version: int = -1
    files_before: int = 0  # active files (DESCRIBE DETAIL numFiles)
    files_after: int = 0
    bytes_before: int = 0
    bytes: int = 0
    rows: int = 0
    partitions: int = 0
    partition_columns: list[str] = field(default_factory=list)
    disk_files_before: int = 0  # data files on storage, referenced or not
    disk_files_after: int = 0
    vacuum_files: int = 0  # deleted (or, dry run, that would be deleted)
    properties_set: dict = field(
        default_factory=dict
    )  # declared properties the table lacked (dry run: would set)
    optimized: bool = False
    seconds: float = 0.0


def select_tables(names: list[str] | None) -> list[TableSpec]:
    """The specs named by `--table` (`posix` or `bronze/posix`), or every table."""
    if not names:
        return list(TABLES.values())
    by_name = {
        **{s.name: s for s in TABLES.values()},
        **{f"{s.layer}/{s.name}": s for s in TABLES.values()},
    }
    out = []
    for n in names:
        if n not in by_name:
            known = ", ".join(sorted(s.name for s in TABLES.values()))
            raise ConfigError(f"--table: unknown table {n!r} (known: {known})")
        if by_name[n] not in out:
            out.append(by_name[n])
    return out


def _detail(spark, path: str):
    return spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]


def _version(spark, path: str) -> int:
    from delta.tables import DeltaTable

    return int(DeltaTable.forPath(spark, path).history(1).collect()[0]["version"])


def disk_files(path: str) -> int:
    """Parquet data files under the table folder, referenced or not (what VACUUM can delete)."""
    import pyarrow.fs as pafs

    from readers.fsio import resolve

    fs, root = resolve(path)
    n = 0
    for i in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
        rel = i.path[len(root) :].lstrip("/")
        if (
            i.type == pafs.FileType.File
            and not rel.startswith("_delta_log")
            and rel.endswith(".parquet")
        ):
            n += 1
    return n


def property_drift(spec: TableSpec, have: dict) -> dict:
    """The spec's declared properties that `have` (the table's) lacks or holds with another value,
    but for the `iolake.` ones (state the stage that earns it sets, e.g. schemas/logs.py's
    JOBID_FILLED: set here, it would say an unfilled ledger is filled)."""
    return {
        k: str(v)
        for k, v in spec.properties.items()
        if have.get(k) != str(v) and not k.startswith(STATE_PROPERTY)
    }


def _sync_properties(
    spark, spec: TableSpec, path: str, detail, dry_run: bool, name: str, echo
) -> dict:
    drift = property_drift(spec, dict(detail["properties"] or {}))
    if drift:
        pairs = ", ".join(f"'{k}' = '{v}'" for k, v in sorted(drift.items()))
        if not dry_run:
            spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({pairs})")
        echo(
            f"[maintain] {name}: {'would set' if dry_run else 'set'} declared table properties: {pairs}"
        )
    return drift


def _vacuum(
    spark, path: str, hours: float, dry_run: bool, allow_short: bool, table: str, echo
) -> int:
    sql = f"VACUUM delta.`{path}` RETAIN {hours:g} HOURS" + (" DRY RUN" if dry_run else "")
    lift = allow_short and hours < DELTA_RETENTION_SAFETY_HOURS
    previous = spark.conf.get(RETENTION_CHECK, "true")
    if lift:
        echo(
            f"[maintain] {table}: WARNING retention {hours:g} h is below Delta's safety limit "
            f"({DELTA_RETENTION_SAFETY_HOURS:g} h); its check is lifted for this VACUUM "
            "(maintain.allow_short_retention: true)"
        )
        spark.conf.set(RETENTION_CHECK, "false")
    try:
        out = spark.sql(sql).collect()
    except (
        Exception
    ) as e:  # Delta's check: the table's own delta.deletedFileRetentionDuration is longer
        if "retentionDurationCheck" in str(e):
            raise ConfigError(
                f"maintain.vacuum_retention_hours: {hours:g} h is below {table}'s "
                f"delta.deletedFileRetentionDuration (Delta refused the VACUUM); raise the retention or set "
                f"maintain.allow_short_retention: true"
            ) from e
        raise
    finally:
        if lift:
            spark.conf.set(RETENTION_CHECK, previous)
    return len(out) if dry_run else -1


def maintain_table(
    spark, conf: Config, spec: TableSpec, dry_run: bool = False, echo=print
) -> TableReport:
    from delta.tables import DeltaTable

    t0 = time.monotonic()
    path = spec.path(conf.lake.root)
    name = f"{spec.layer}/{spec.name}"
    zorder = [] if spec.sorted_by else list(spec.zorder_columns)
    before = _detail(spark, path)
    rep = TableReport(
        name,
        path,
        zorder,
        _version(spark, path),
        files_before=int(before["numFiles"]),
        bytes_before=int(before["sizeInBytes"]),
        partition_columns=list(before["partitionColumns"]),
    )
    rep.disk_files_before = disk_files(path)
    rep.properties_set = _sync_properties(spark, spec, path, before, dry_run, name, echo)
    if not dry_run:
        t = time.monotonic()
        if spec.sorted_by:
            from iolake.lake.layout import ROW_GROUP_ROWS, sort_rewrite

            (column,) = spec.sorted_by
            sort_rewrite(path, column, spark.conf.get(USER_METADATA, None))
            what = f"sorted by {column} in row groups of {ROW_GROUP_ROWS:,} rows (delta-rs)"
        else:
            opt = DeltaTable.forPath(spark, path).optimize()
            what = (
                f"OPTIMIZE ZORDER BY ({', '.join(zorder)})" if zorder else "OPTIMIZE (compaction)"
            )
            (opt.executeZOrderBy(*zorder) if zorder else opt.executeCompaction()).collect()
        rep.optimized = True
        after = _detail(spark, path)
        echo(
            f"[maintain] {name}: {what}: {rep.files_before} -> {int(after['numFiles'])} files "
            f"({time.monotonic() - t:.1f} s)"
        )
    hours = conf.maintain.vacuum_retention_hours
    t = time.monotonic()
    on_disk = disk_files(path) if rep.optimized else rep.disk_files_before
    n = _vacuum(spark, path, hours, dry_run, conf.maintain.allow_short_retention, name, echo)
    rep.disk_files_after = disk_files(path)
    rep.vacuum_files = n if dry_run else max(0, on_disk - rep.disk_files_after)
    verb = "would delete" if dry_run else "deleted"
    echo(
        f"[maintain] {name}: VACUUM RETAIN {hours:g} HOURS{' DRY RUN' if dry_run else ''}: "
        f"{verb} {rep.vacuum_files} unreferenced file(s) ({time.monotonic() - t:.1f} s)"
    )

    detail = _detail(spark, path)
    rep.version = _version(spark, path)
    rep.files_after = int(detail["numFiles"])
    rep.bytes = int(detail["sizeInBytes"])
    df = spark.read.format("delta").load(path)
    rep.rows = df.count()
    rep.partitions = (
        df.select(*rep.partition_columns).distinct().count()
        if rep.partition_columns
        else (1 if rep.rows else 0)
    )
    rep.seconds = round(time.monotonic() - t0, 2)
    return rep


def run(
    spark, conf: Config, tables: list[str] | None = None, dry_run: bool = False, echo=print
) -> list[TableReport]:
    from delta.tables import DeltaTable

    from iolake.lake import commit_metadata
    from iolake.runinfo import RunInfo

    specs = select_tables(tables)
    info = RunInfo.new(conf)
    commit_metadata(spark, info.run_id, info.config_digest, "maintain", info.git_sha)
    present = [s for s in specs if DeltaTable.isDeltaTable(spark, s.path(conf.lake.root))]
    echo(
        f"[maintain] run {info.run_id}: {len(present)} table(s) under {conf.lake.root}"
        f"{' (dry run: VACUUM DRY RUN only, no OPTIMIZE)' if dry_run else ''}"
    )
    for s in specs:
        if s not in present and tables:
            echo(f"[maintain] {s.layer}/{s.name}: not in the lake, skipped")
    reports = []
    for i, spec in enumerate(present, 1):
        echo(f"[maintain] ({i}/{len(present)}) {spec.layer}/{spec.name}")
        reports.append(maintain_table(spark, conf, spec, dry_run, echo))
    return reports


def format_reports(reports: list[TableReport]) -> str:
    head = f"{'table':<28} {'version':>7} {'files':>13} {'rows':>12} {'bytes':>13} {'parts':>5} {'vacuumed':>8}"
    lines = [head]
    for r in reports:
        lines.append(
            f"{r.table:<28} {r.version:>7} {f'{r.files_before} -> {r.files_after}':>13} {r.rows:>12,} "
            f"{r.bytes:>13,} {r.partitions:>5} {r.vacuum_files:>8}"
        )
    return "\n".join(lines)


def main(spark, conf: Config, tables: list[str] | None = None, dry_run: bool = False) -> int:
    import uuid

    from iolake.lake import lock

    # OPTIMIZE and VACUUM commit too: on an S3 lake they wait for the writer lease like a run
    with lock.hold(conf, f"maintain-{uuid.uuid4().hex[:8]}"):
        reports = run(spark, conf, tables, dry_run)
    print(format_reports(reports))
    return 0
