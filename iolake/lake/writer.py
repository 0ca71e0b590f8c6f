"""The one writer of every table: gate the rows, then commit them once, retrying lost races.

Every stage (ingest, features, …, score) and the `ops/runs` table write through `write()`:
1. the table's Great Expectations suite (`iolake.gates`, declared in `schemas/`) runs on the
   rows when `gates.enabled`; a failure raises `GateFailed` and nothing is committed;
2. the commit, by `mode`:
   - `insert` (default): an insert-only MERGE matched on `spec.merge_on` — a log's rows land in
     a table in one commit or not at all, and rows already there are never inserted again
     (predictions match on file and model version too). Exactly-once under re-runs.
   - `overwrite`: the table's rows are replaced in one commit (tables derived from the whole
     lake, e.g. `gold/placement_labels`).
   - `append`: rows are added as they are (`ops/runs`: one row per run, a fresh run id each).
   - `replace`: the rows of the partitions named in `months` (values of the table's one partition
     column) are replaced by `df` in one commit (Delta `replaceWhere`); other partitions stay
     (the fleet marts: a nightly drop rewrites the months it touched). With `only`
     ({data column: values}), just those partitions' rows whose column holds one of the values
     are replaced (gold/fleet_health: the nights a drop touched, not their whole months).
   - `files`: ingest's staged Parquet files (`files`, read by the gate as `df`) are added to the
     table as they are, in one commit, without writing the rows again (`iolake.lake.files`);
     exactly once as `insert` is, falling back to it when the table already holds some of the logs.
3. a commit that loses a race to a concurrent run is retried (`lake.commit_retries`, first
   back-off `lake.retry_backoff_s`); every commit carries the run's `userMetadata`.
"""

from __future__ import annotations

import time

MODES = ("insert", "overwrite", "append", "files", "replace")


def write(
    spark,
    conf,
    spec,
    df,
    mode: str = "insert",
    months: list[str] | None = None,
    echo=None,
    files: list[str] | None = None,
    log_ids=None,
    only: dict[str, list] | None = None,
) -> None:
    """Gate `df` against `spec`'s expectations, then commit it to `spec`'s table in `conf.lake.root`.

    `months`: the batch's job_months when the caller knows them (else an insert reads them from
    `df`); with mode `replace`, the partitions replaced, narrowed by `only` when given. `files`,
    `log_ids`: with mode `files`, the staged Parquet files `df` reads and a DataFrame of the
    batch's log_ids not read from them (they move). `echo`, when given, hears how long each step
    took (`[commit] io_ops: gate 3.1 s, merge 9.8 s`).
    """
    from iolake import gates
    from iolake.lake.delta import ensure_table, merge_new_logs, with_retries

    if mode not in MODES:
        raise ValueError(f"write mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "files" and (not files or log_ids is None):
        raise ValueError("write mode 'files' needs the staged files and the batch's log_ids")
    if mode == "replace" and (months is None or len(spec.partition_by) != 1):
        raise ValueError(
            "write mode 'replace' needs `months` and a table with one partition column"
        )
    lake, retries, backoff = conf.lake.root, conf.lake.commit_retries, conf.lake.retry_backoff_s
    t0 = time.monotonic()
    if conf.gates.enabled:
        gates.validate(spec, df, conf.gates.sample_rows)
    t1 = time.monotonic()
    verb = "merge" if mode == "insert" else mode
    if mode == "insert":
        merge_new_logs(spark, spec, lake, df, retries, months, backoff)
    elif mode == "files":
        from iolake.lake.files import commit_staged_files

        how = commit_staged_files(spark, spec, lake, files, log_ids, retries, backoff)
        verb = (
            f"add {len(files)} files"
            if how == "files"
            else "merge (the table held some of these logs)"
        )
    elif mode == "replace":
        ensure_table(spark, spec, lake, retries)
        where = " AND ".join(
            _partitions_in(column, values)
            for column, values in {spec.partition_by[0]: months, **(only or {})}.items()
        )
        with_retries(
            lambda: (
                df.select(*spec.columns)
                .write.format("delta")
                .mode("overwrite")
                .option("replaceWhere", where)
                .save(spec.path(lake))
            ),
            retries,
            f"replace {spec.name}",
            backoff_s=backoff,
        )
    else:
        ensure_table(spark, spec, lake, retries)
        path = spec.path(lake)
        with_retries(
            lambda: df.select(*spec.columns).write.format("delta").mode(mode).save(path),
            retries,
            f"{mode} {spec.name}",
            backoff_s=backoff,
        )
    if echo is not None:
        echo(f"[commit] {spec.name}: gate {t1 - t0:.1f} s, {verb} {time.monotonic() - t1:.1f} s")


def _partitions_in(column: str, values: list) -> str:
    """A `replaceWhere` predicate: `column` in `values` (false when there are none); dates and
    other values are quoted as their ISO strings, which Spark casts to the column's type."""
    if not values:
        return "false"
    quoted = ", ".join("'" + str(v).replace("'", "''") + "'" for v in values)
    return f"`{column}` IN ({quoted})"
