"""The `ops/runs` table: one row per `iolake run` / `iolake ingest`, written however the run ends.

`RunRecorder` collects a run's facts as it goes (stage times, ingest counts); `record()` wraps
the run so that its row is appended in a `finally`, and a failure to append it is reported on
stderr without ever masking the run's own error or exit code.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from dataclasses import dataclass, field

from iolake.exits import exit_code_for
from iolake.runinfo import RunInfo
from schemas.runs import SPEC as RUNS


def ingest_counts(summary: dict) -> dict[str, int]:
    """listed / new / skipped (already in the ledger, or a duplicate copy) and logs per status."""
    counts = {"listed": int(summary.get("listed", 0)), "new": int(summary.get("new", 0))}
    counts["skipped"] = counts["listed"] - counts["new"]
    for status in ("ok", "partial", "quarantined"):
        counts[status] = int(summary.get("status", {}).get(status, 0))
    return counts


@dataclass
class RunRecorder:
    command: str
    conf: object
    inputs: list[str]
    info: RunInfo
    started: dt.datetime
    t0: float
    spark: object = None
    stage_seconds: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] | None = None
    lease: object = None  # the lake's writer lease while the run holds it (S3 lakes)

    @classmethod
    def start(cls, command: str, conf, inputs: list[str]) -> RunRecorder:
        return cls(
            command,
            conf,
            list(inputs),
            RunInfo.new(conf),
            dt.datetime.now(dt.UTC),
            time.monotonic(),
        )

    def stage_done(self, name: str, seconds: float) -> None:
        self.stage_seconds[name] = round(seconds, 3)

    def row(self, exit_code: int, exc: BaseException | None) -> dict:
        finished = dt.datetime.now(dt.UTC)
        error = None
        if exc is not None:
            error = f"{type(exc).__name__}: {exc}"[:4000]
        return {
            "run_id": self.info.run_id,
            "command": self.command,
            "env": self.conf.env,
            "lake": self.conf.lake.root,
            "inputs": self.inputs,
            "git_sha": self.info.git_sha,
            "config_digest": self.info.config_digest,
            "started": self.started,
            "finished": finished,
            "duration_s": round(time.monotonic() - self.t0, 3),
            "status": "succeeded" if exit_code == 0 else "failed",
            "exit_code": int(exit_code),
            "error": error,
            "ingest_counts": self.counts,
            "stages": list(self.stage_seconds),
            "stage_seconds": dict(self.stage_seconds),
            "table_versions": None,
        }

    def write(self, exit_code: int, exc: BaseException | None) -> str | None:
        """Append the run's row; returns the table path, or None (reason on stderr) if it could not."""
        try:
            spark = self.spark
            if spark is None:
                from pyspark.sql import SparkSession

                spark = SparkSession.getActiveSession()
            if spark is None:
                print(
                    f"iolake: run {self.info.run_id} not recorded in {RUNS.path(self.conf.lake.root)}: "
                    "no Spark session was started",
                    file=sys.stderr,
                )
                return None
            from iolake.lake import commit_metadata
            from iolake.lake.writer import write

            row = self.row(exit_code, exc)
            try:
                from iolake.lake import arrow

                row["table_versions"] = arrow.versions(
                    self.conf.lake.root
                )  # delta-rs: no Spark job
            except Exception as e:  # versions are a convenience: never lose the row for them
                print(f"iolake: table versions not recorded: {e}", file=sys.stderr)
            commit_metadata(
                spark, self.info.run_id, self.info.config_digest, "runs", self.info.git_sha
            )
            path = RUNS.path(self.conf.lake.root)
            write(
                spark, self.conf, RUNS, _row_frame(spark, row), mode="append"
            )  # gated, like every table
            print(
                f"iolake: run {self.info.run_id} {row['status']} (exit {exit_code}); recorded in {path}"
            )
            return path
        except Exception as e:  # noqa: BLE001 - must never mask the run's own outcome
            print(
                f"iolake: run {self.info.run_id} could not be recorded in {RUNS.path(self.conf.lake.root)}: "
                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                file=sys.stderr,
            )
            return None


def _row_frame(spark, row: dict):
    """The row as a frame of RUNS' schema; `stage_seconds` keeps pipeline order (a Python dict
    becomes a hash map on its way to the JVM, so it travels as ordered entries)."""
    import pyspark.sql.functions as F
    from pyspark.sql import types as T

    entries = T.ArrayType(
        T.StructType(
            [
                T.StructField("key", T.StringType(), False),
                T.StructField("value", T.DoubleType(), True),
            ]
        )
    )
    struct = T.StructType(
        [
            T.StructField(f.name, entries, True) if f.name == "stage_seconds" else f
            for f in RUNS.struct.fields
        ]
    )
    row = {**row, "stage_seconds": list(row["stage_seconds"].items())}
    df = spark.createDataFrame([row], struct)
    return df.withColumn("stage_seconds", F.map_from_entries("stage_seconds")).select(*RUNS.columns)


def record(command: str, conf, inputs: list[str], body, lease: bool = False) -> int:
    """Run `body(recorder) -> exit code` and append its `ops/runs` row, whatever happens.

    With `lease`, the run holds its lake's writer lease (`iolake/lake/lock.py`; S3 lakes only) from
    before `body` until after the row is written, as `recorder.lease` (None for other lakes).
    Exceptions propagate unchanged after the row is written (the caller maps them to exit codes).
    """
    import contextlib

    from iolake.lake import lock

    rec = RunRecorder.start(command, conf, inputs)
    code, error = 1, None
    with contextlib.ExitStack() as held:
        try:
            if lease:
                rec.lease = held.enter_context(lock.hold(conf, rec.info.run_id))
            code = body(rec)
            return code
        except BaseException as e:
            error, code = e, exit_code_for(e)
            raise
        finally:
            rec.write(code, error)
