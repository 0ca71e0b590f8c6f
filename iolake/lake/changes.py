"""Where an incremental stage's new logs can be: the `job_month`s the lake's commits touched since
the stage's last run.

A stage with `new_logs: {from, done}` works on the logs of `from` that `done` does not hold
(`iolake.lake.unprocessed_logs`). Over whole tables that anti-join costs in proportion to the lake
(20 s for one stage on the million-log lake, five stages a night), not to the night. But a log only
becomes new work through a commit: an `add` to `from`, a `remove` from `done`, or a `remove` from
`ops/empty_logs` (a log recorded there as processed without a row). So after a stage succeeds the
runner sets a *mark* on its `done` table, the table property `iolake.newLogs.<stage>`: the versions
of the three tables the run started from. The next run reads the commits made since those versions
(Delta's own log, `DeltaLog.getChanges`) and the partition values they name, and the anti-join
reads only those months: a night's new work is found by reading the night's month(s).

The mark only narrows where the anti-join looks; which logs are new is still decided by the
anti-join, so a mark that is too old costs time, never a log. `months_to_check` returns None (look
everywhere, as without a mark) when:
- `done` has no mark for the stage (a lake from before the marks, or a rebuilt `done` table: the
  property lives in the table's own metadata, so a new build has none);
- `from` or `ops/empty_logs` is another build of its table than the mark names (Delta table id);
- a commit since the mark is no longer in the Delta log (log retention: a stage not run for
  `delta.logRetentionDuration`);
- an action since the mark has no `job_month` partition value (an unpartitioned table; every
  removal from the unpartitioned `ops/empty_logs`), or there are more than `MAX_ACTIONS` of them
  or more months than the runner prunes by (a backfill: reading everything is then as cheap).

Only actions that change data count: OPTIMIZE and other compactions (`dataChange: false`) rewrite
rows without adding or removing a log, so `iolake maintain` does not widen the next night's read.

The mark's versions are read *before* the stage finds its work, so a commit racing the stage is in
the next run's window; the mark is set only after the stage and its `ops/empty_logs` records are
committed, so a failed run leaves the previous mark; a run that finds no data committed since the
mark keeps it (a new mark would be a commit to `done` at every idle run). See
docs/decisions/0050-new-logs-from-the-commits.md.
"""

from __future__ import annotations

import json

from iolake.lake.delta import (
    delta_log,
    latest_metadata,
    sorted_months,
    table_exists,
    with_retries,
)
from schemas import TableSpec

MARK = "iolake.newLogs."  # + the stage's name: a table property of the stage's `done` table
# Delta's errors for commits no longer in the log (log retention) or a log with a gap
LOG_GONE = (
    "DELTA_MISSING_FILES_UNEXPECTED_VERSION",
    "DELTA_VERSIONS_NOT_CONTIGUOUS",
    "DELTA_LOG_FILE_NOT_FOUND",
    "FileNotFoundException",
)
MAX_ACTIONS = 20_000  # data-changing actions read from the logs before reading everything instead
UNREAD = object()  # months_to_check: the caller did not read the stage's mark


def mark_key(stage: str) -> str:
    return MARK + stage


def start_of(spark, source: TableSpec, done: TableSpec, empty: TableSpec, lake: str) -> dict:
    """The mark a run starting now would set: each table's id and latest version (-1 for a table
    that does not exist yet, version 0 being its first commit)."""
    mark = {"from": f"{source.layer}/{source.name}"}
    for key, spec in (("from", source), ("done", done), ("empty", empty)):
        mark[f"{key}_id"], mark[f"{key}_version"] = _id_and_version(spark, spec, lake)
    return mark


def _id_and_version(spark, spec: TableSpec, lake: str) -> tuple[str | None, int]:
    if not table_exists(spark, spec, lake):
        return None, -1
    snapshot = delta_log(spark, spec.path(lake)).startTransaction().snapshot()
    return str(snapshot.metadata().id()), int(snapshot.version())


def completed(spark, mark: dict, done: TableSpec, empty: TableSpec, lake: str) -> dict:
    """`mark` with the id of a `done` or `ops/empty_logs` table that did not exist when the run
    started and that the run created: its version stays -1, so the next run reads its every commit."""
    mark = dict(mark)
    for key, spec in (("done", done), ("empty", empty)):
        if mark[f"{key}_id"] is None:
            mark[f"{key}_id"], _ = _id_and_version(spark, spec, lake)
            mark[f"{key}_version"] = -1
    return mark


def read_mark(spark, done: TableSpec, lake: str, stage: str) -> dict | None:
    """The stage's mark on its `done` table, or None (no such table, no mark, an unreadable one)."""
    if not table_exists(spark, done, lake):
        return None
    prop = latest_metadata(spark, done.path(lake)).configuration().get(mark_key(stage))
    if not prop.isDefined():
        return None
    try:
        mark = json.loads(prop.get())
    except ValueError:
        return None
    return mark if isinstance(mark, dict) else None


def write_mark(spark, done: TableSpec, lake: str, stage: str, mark: dict, retries: int = 8) -> bool:
    """Set the stage's mark on its `done` table (one metadata-only commit), unless the table does not
    exist or already holds this mark. Returns whether it committed."""
    if not table_exists(spark, done, lake) or read_mark(spark, done, lake, stage) == mark:
        return False
    value = json.dumps(mark, sort_keys=True).replace("'", "\\'")
    path = done.path(lake)
    with_retries(
        lambda: spark.sql(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('{mark_key(stage)}' = '{value}')"
        ),
        retries,
        f"mark {done.layer}/{done.name} for {stage}",
    )
    return True


def months_since(
    spark, spec: TableSpec, lake: str, after: int, latest: int, kind: str, budget: list[int]
) -> set | None:
    """The `job_month` partition values of the data-changing `kind` ("add" or "remove") actions
    committed to `spec` after version `after`, its `latest` version being known (-1: no table);
    None when that cannot be told (see the module docstring). `budget` ([actions left]) is shared
    by the calls of one run."""
    if latest <= after:
        return set()
    months: set = set()
    try:
        log = delta_log(spark, spec.path(lake))
        changes = log.getChanges(after + 1, spark._jvm.scala.Option.empty(), True)
        while changes.hasNext():
            actions = changes.next()._2().iterator()
            while actions.hasNext():
                # one JVM call per action (its JSON, as in the log) rather than one per field
                action = json.loads(actions.next().json()).get(kind)
                if action is None or not action.get("dataChange", True):
                    continue
                budget[0] -= 1
                if budget[0] < 0:
                    return None
                values = action.get("partitionValues") or {}
                if "job_month" not in values:
                    return None
                months.add(values["job_month"] or None)  # a null partition value: null or ""
    except Exception as e:  # py4j's error of a JVM exception
        if any(name in str(e) for name in LOG_GONE):
            return None
        raise
    return months


def months_to_check(
    spark,
    source: TableSpec,
    done: TableSpec,
    empty: TableSpec,
    lake: str,
    stage: str,
    limit: int,
    old: dict | None | object = UNREAD,
) -> tuple[list | None, dict]:
    """(months, mark): the job_months where the stage's new logs can be (None: every month, an
    empty list: none) and the mark to set once the stage has succeeded. `old` is the stage's
    mark when the caller has read it already (`read_mark`), so it is not read twice."""
    now = start_of(spark, source, done, empty, lake)
    if old is UNREAD:
        old = read_mark(spark, done, lake, stage)
    same_build = old is not None and all(
        old.get(k) == now[k] for k in ("from", "from_id", "done_id")
    )
    if not same_build or (old.get("empty_id") not in (None, now["empty_id"])):
        return None, now
    try:
        after = {k: int(old[f"{k}_version"]) for k in ("from", "done", "empty")}
    except (KeyError, TypeError, ValueError):
        return None, now
    budget = [MAX_ACTIONS]

    def since(key: str, spec: TableSpec, kind: str) -> set | None:
        return months_since(spark, spec, lake, after[key], now[f"{key}_version"], kind, budget)

    added = since("from", source, "add")
    removed = since("done", done, "remove")
    unmarked = since("empty", empty, "remove")
    if added is None or removed is None or unmarked is None or len(added | removed) > limit:
        return None, now
    return sorted_months(added | removed), now
