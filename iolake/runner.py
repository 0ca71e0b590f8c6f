"""The stage runner: every stage of `pipeline.yaml` runs through here, the same way.

For a stage it
1. stamps the session's Delta commits with the run id, git sha, config digest and stage;
2. when the stage is incremental (`new_logs: {from, done}`), finds the log_ids of `from` that
   `done` does not hold yet (nor `ops/empty_logs` for this stage: new logs an earlier run
   processed without a row in `done`), and stops early when there are none. It looks only in the
   job_months that the commits since the stage's last successful run touched (the mark that run
   left on `done`: `iolake.lake.changes`), so finding a night's work reads the night's months;
3. hands the stage a `StageContext`, whose `read()` returns a declared input restricted to those
   logs (first to their `job_month` partitions, then to their ids) and whose `write()` gates and
   commits a declared output through the one writer (`iolake.lake.writer`). Reading or writing
   a table `pipeline.yaml` does not declare for the stage raises `UndeclaredTable`: the file is
   the stage's contract, checked as it runs;
4. calls the stage. A stage module is either *pure* — `transform(inputs, conf) -> outputs`, with
   `inputs` and `outputs` dicts keyed `layer/name`, no I/O, no action; the runner reads every
   declared input, caches and counts each output, and commits the non-empty ones in declared
   order (optional `summarize(outputs) -> dict` adds stage facts, named in `SUMMARY`, to the summary) — or it does
   work that is not a DataFrame transform (decoding files in executors, fitting models, loading
   them from the registry) in `execute(ctx) -> dict`, reading and writing through `ctx` alike;
   A stage marked `new_logs.by_month` (its rows for a log depend on that log alone) with more
   new logs than conf `spark.batch_logs` runs once per batch of whole job_months instead, each
   batch read, computed and committed on its own: a first load of a million logs holds a batch;
5. after an incremental stage, records in `ops/empty_logs` the new logs it left without a row in
   `done`, so that they are not new work again (a stage's rows for a log depend on that log alone),
   and then sets its mark on `done`: the table versions this run started from.

Every stage module has the same command line (`iolake.cli.stage_main`) and the same Python
entry, `run(spark, conf, run_info=None, echo=print)`, which calls `run_stage` here: both come
from `iolake.cli.entry_points(NAME)`.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field

from iolake.lake.delta import month_filter, months_text, sorted_months
from iolake.pipeline import Stage, load_pipeline, table_spec
from iolake.runinfo import RunInfo


class UndeclaredTable(RuntimeError):
    """A stage read or wrote a table that its entry in pipeline.yaml does not declare."""


@dataclass
class StageContext:
    spark: object
    conf: object
    stage: Stage
    info: RunInfo
    echo: object = print
    params: dict = field(default_factory=dict)  # what the caller passes on (ingest's `traces`)
    todo: object = None  # DataFrame of log_id: the logs an incremental stage works on
    n_todo: int | None = None
    todo_months: list | None = (
        None  # the new logs' job_months, when few enough to prune by (PRUNE_MONTHS_MAX)
    )
    read_tables: list = field(default_factory=list)
    written_tables: list = field(default_factory=list)

    def spec(self, table: str, kind: str):
        declared = self.stage.inputs if kind == "input" else self.stage.outputs
        if table not in declared:
            raise UndeclaredTable(
                f"stage {self.stage.name!r} {'reads' if kind == 'input' else 'writes'} {table}, "
                f"which pipeline.yaml does not declare as one of its {kind}s "
                f"({', '.join(declared) or 'none'})"
            )
        spec = table_spec(table)
        if spec is None:
            raise UndeclaredTable(f"stage {self.stage.name!r}: {table} is not a table of schemas/")
        return spec

    def exists(self, table: str) -> bool:
        from iolake.lake import table_exists

        return table_exists(self.spark, self.spec(table, "input"), self.conf.lake.root)

    def version(self, table: str) -> int | None:
        from iolake.lake import table_version

        return table_version(self.spark, self.spec(table, "input"), self.conf.lake.root)

    def narrow(self, todo, n: int) -> None:
        """Restrict this stage's reads to the n logs of `todo` (log_id, job_month), as the runner
        restricts an incremental stage's to its new logs (`read`: their months' partitions, then a
        semi join): for an `execute` stage that finds its own work (advise: the jobs not yet
        advised with the champion). Nothing is recorded as done for them (`ops/empty_logs`)."""
        self.todo, self.n_todo, self.todo_months = todo.select("log_id"), n, months_of(todo)

    def read(self, table: str, whole: bool = False):
        """A declared input (an empty frame of its schema before any run wrote it), restricted to the
        stage's new logs when the stage is incremental, unless `whole`."""
        from iolake.lake import read_or_empty

        spec = self.spec(table, "input")
        self.read_tables.append(table)
        df = read_or_empty(self.spark, spec, self.conf.lake.root)
        if self.todo is not None and not whole and "log_id" in spec.columns:
            if self.todo_months is not None and "job_month" in spec.partition_by:
                df = df.where(month_filter(self.todo_months))
            df = df.join(self.todo_side(), "log_id", "left_semi")
        return df

    def todo_side(self):
        """The new logs as the right side of a semi join: broadcast up to BROADCAST_TODO_MAX logs (a few
        MB of ids). Left to the planner, a cached side of 100,000 log ids (~8 MB) is over the 1 MB
        static threshold, so every input would be shuffled by log_id before the stage's own
        shuffles (io_ops has a row per DXT segment)."""
        return semi_side(self.todo, self.n_todo or 0)

    def ensure(self, table: str) -> None:
        """Create a declared output, empty, when it does not exist yet (a table whose absence would
        mean something else to its readers: `not_at_ingest`)."""
        from iolake.lake import ensure_table, table_exists

        spec = self.spec(table, "output")
        if not table_exists(self.spark, spec, self.conf.lake.root):
            self.written_tables.append(table)
            ensure_table(self.spark, spec, self.conf.lake.root)

    def fill_once(self, table: str, column: str, source: str, marker: str, on_start) -> int | None:
        """Fill a declared output's null `column` from another declared table's rows of the same
        log, once per lake (`iolake.lake.fill_once`: the table property `marker` records it)."""
        from iolake.lake import fill_once

        spec = self.spec(table, "output")
        try:
            src = self.spec(source, "input")
        except UndeclaredTable:
            src = self.spec(source, "output")  # e.g. ingest's own bronze/jobs
        filled = fill_once(self.spark, spec, self.conf.lake.root, column, src, marker, on_start)
        if filled is not None:
            self.written_tables.append(table)
        return filled

    def write(
        self,
        table: str,
        df,
        mode: str = "insert",
        months: list[str] | None = None,
        files: list[str] | None = None,
        log_ids=None,
        only: dict[str, list] | None = None,
    ) -> None:
        """Gate and commit `df` to a declared output (`iolake.lake.writer.write`)."""
        from iolake.lake.writer import write

        spec = self.spec(table, "output")
        self.written_tables.append(table)
        write(self.spark, self.conf, spec, df, mode, months, self.echo, files, log_ids, only)


def stage_by_name(name: str, pipeline=None) -> Stage:
    stages = {s.name: s for s in (load_pipeline(pipeline) if pipeline else load_pipeline())}
    if name not in stages:
        from iolake.config import ConfigError

        raise ConfigError(f"pipeline.yaml: no stage {name!r} (stages: {', '.join(stages)})")
    return stages[name]


def run_stage(
    spark, conf, stage: Stage | str, info: RunInfo | None = None, echo=print, **params
) -> dict:
    """Run one stage (a `Stage` or its name) and return its summary (always with `seconds`)."""
    from iolake.lake import commit_metadata, unprocessed_logs

    stage = stage_by_name(stage) if isinstance(stage, str) else stage
    info = info or RunInfo.new(conf)
    mod = importlib.import_module(stage.module)
    t0 = time.monotonic()
    commit_metadata(spark, info.run_id, info.config_digest, stage.name, info.git_sha)
    ctx = StageContext(spark, conf, stage, info, echo, dict(params))
    mark = None
    if stage.new_logs:
        source, done = table_spec(stage.new_logs["from"]), table_spec(stage.new_logs["done"])
        months, mark = new_log_months(spark, conf, stage.name, source, done, echo)
        todo = unprocessed_logs(spark, source, done, conf.lake.root, stage.name, months).cache()
        ctx.todo, ctx.n_todo = todo.select("log_id"), todo.count()
        ctx.todo_months = months_of(todo) if ctx.n_todo else None
        if ctx.n_todo == 0:
            todo.unpersist()
            if mark is not None:
                set_mark(spark, conf, stage.name, done, mark)
            echo(f"[{stage.name}] no new logs")
            return {
                "logs": 0,
                "rows": {},
                **{k: 0 for k in getattr(mod, "SUMMARY", ())},
                "seconds": time.monotonic() - t0,
            }
    try:
        if stage.new_logs:
            summary = _run_batches(mod, ctx, todo, done)
        else:
            summary = _run_once(mod, ctx, None, None)
        if mark is not None:
            set_mark(spark, conf, stage.name, done, mark)
    finally:
        if stage.new_logs and ctx.todo is not None:
            todo.unpersist()
    summary["seconds"] = time.monotonic() - t0
    return summary


def _run_once(mod, ctx: StageContext, todo, done) -> dict:
    """The stage over `ctx`'s logs (all of them when it is not incremental), then, for an
    incremental one, its new logs without a row in `done` recorded (`mark_empty_logs`)."""
    restore = scale_shuffles(ctx.spark, ctx.conf.spark.logs_per_partition, ctx.n_todo)
    try:
        if hasattr(mod, "execute"):
            summary = dict(mod.execute(ctx) or {})
        else:
            summary = _run_pure(mod, ctx)
        if todo is not None and ctx.n_todo:
            summary["empty_logs"] = mark_empty_logs(ctx, todo, done)
    finally:
        restore()
    return summary


def _run_batches(mod, ctx: StageContext, todo, done) -> dict:
    """An incremental stage over its new logs `todo` (cached; log_id, job_month): at once, or, for a
    `new_logs.by_month` stage over more than `spark.batch_logs` of them, in batches of whole
    job_months (`month_batches`), each read, computed and committed on its own, so that a first
    load holds one batch in memory and a run stopped part-way keeps the batches it committed (the
    next run's new logs are the rest). The summary adds up the batches'."""
    cap = ctx.conf.spark.batch_logs
    if not (ctx.stage.by_month and cap and ctx.n_todo > cap):
        return _run_once(mod, ctx, todo, done)
    counts = {r["job_month"]: r["count"] for r in todo.groupBy("job_month").count().collect()}
    batches = month_batches(counts, cap)
    ctx.echo(
        f"[{ctx.stage.name}] {ctx.n_todo:,} new logs over {len(counts)} months: "
        f"{len(batches)} batches of whole months, at most {cap:,} logs each (spark.batch_logs)"
    )
    whole, summary = (ctx.todo, ctx.n_todo, ctx.todo_months), {}
    try:
        for i, months in enumerate(batches, 1):
            part = todo.where(month_filter(months))
            n = sum(counts[m] for m in months)
            ctx.todo, ctx.n_todo, ctx.todo_months = part.select("log_id"), n, months
            ctx.echo(f"[{ctx.stage.name}] batch {i}/{len(batches)}: {_span(months)}, {n:,} logs")
            summary = add_summaries(summary, _run_once(mod, ctx, part, done))
    finally:
        ctx.todo, ctx.n_todo, ctx.todo_months = whole
    return summary


def month_batches(counts: dict, cap: int) -> list[list]:
    """`counts` ({job_month: new logs}) as batches of consecutive months, each of at most `cap` logs
    (a month with more is a batch of its own): the months in order, a batch closed when the next
    month would take it over `cap`. Logs without a job_month (None) are a batch of their own."""
    batches: list[list] = []
    size = 0
    for m in sorted_months([m for m in counts if m is not None]):
        if batches and size + counts[m] <= cap:
            batches[-1].append(m)
            size += counts[m]
        else:
            batches.append([m])
            size = counts[m]
    return batches + ([[None]] if None in counts else [])


def add_summaries(a: dict, b: dict) -> dict:
    """Two batches' stage summaries as one: counts and rows per table added, other facts the last."""
    out = dict(a)
    for k, v in b.items():
        if k == "rows":
            rows = dict(out.get("rows") or {})
            for t, n in v.items():
                rows[t] = rows.get(t, 0) + n
            out["rows"] = rows
        elif _count(v) and _count(out.get(k)):
            out[k] = out[k] + v
        else:
            out[k] = v
    return out


def _count(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _span(months: list) -> str:
    if months == [None]:
        return "logs without a job_month"
    return months[0] if len(months) == 1 else f"{months[0]}..{months[-1]}"


def new_log_months(spark, conf, stage: str, source, done, echo) -> tuple[list | None, dict]:
    """Where the stage's new logs can be (`iolake.lake.changes.months_to_check`: the job_months the
    commits since its last run touched; None, every month) and the mark to set when it succeeds."""
    from iolake.lake.changes import months_to_check
    from schemas import OPS

    months, mark = months_to_check(
        spark, source, done, OPS["empty_logs"], conf.lake.root, stage, PRUNE_MONTHS_MAX
    )
    if months:
        echo(
            f"[{stage}] new logs looked for in {months_text(months)}: the months committed since "
            "its last run"
        )
    if months == []:
        # no data committed since the mark: it still holds, and a new one would be a commit to
        # `done` each run that the next run would read past
        return months, None
    return months, mark


def set_mark(spark, conf, stage: str, done, mark: dict) -> None:
    """Record on `done` the table versions this successful run started from (`write_mark`)."""
    from iolake.lake.changes import completed, write_mark
    from schemas import OPS

    lake = conf.lake.root
    write_mark(spark, done, lake, stage, completed(spark, mark, done, OPS["empty_logs"], lake))


def mark_empty_logs(ctx: StageContext, todo, done) -> int:
    """Record in ops/empty_logs the new logs the stage has just processed that have no row in its
    `done` table (a job without an I/O interval has no covering set): the next run's new work leaves
    them out instead of processing them again at every run. Returns how many."""
    import pyspark.sql.functions as F

    from iolake.lake import read_table, table_exists, table_id
    from iolake.lake.writer import write
    from schemas import OPS

    spark, lake = ctx.spark, ctx.conf.lake.root
    if not table_exists(spark, done, lake):
        return 0  # nothing committed yet: the logs stay new work
    held = read_table(spark, done, lake)
    if ctx.todo_months is not None and "job_month" in done.partition_by:
        held = held.where(month_filter(ctx.todo_months))
    held = held.select("log_id").join(ctx.todo_side(), "log_id", "left_semi")
    empty = todo.join(held, "log_id", "left_anti").cache()
    n = empty.count()
    if n:
        rows = empty.select(
            F.lit(ctx.stage.name).alias("stage"),
            F.lit(f"{done.layer}/{done.name}").alias("done_table"),
            F.lit(table_id(spark, done, lake)).alias("done_table_id"),
            "log_id",
            "job_month",
            F.lit(ctx.info.run_id).alias("run_id"),
        )
        write(spark, ctx.conf, OPS["empty_logs"], rows, "insert")
        ctx.echo(
            f"[{ctx.stage.name}] {n:,} new log(s) left no row in {done.layer}/{done.name}: "
            "recorded in ops/empty_logs, not new work again"
        )
    empty.unpersist()
    return n


def months_of(todo, limit: int | None = None) -> list | None:
    """The distinct `job_month`s of the new logs (None among them for a log without one), or None
    when there are more than `limit` (PRUNE_MONTHS_MAX): a backfill over every month prunes nothing."""
    limit = PRUNE_MONTHS_MAX if limit is None else limit
    months = [r[0] for r in todo.select("job_month").distinct().limit(limit + 1).collect()]
    return None if len(months) > limit else sorted_months(months)


def semi_side(ids, n: int):
    """`ids` (n log ids) as the right side of a semi join: broadcast up to BROADCAST_TODO_MAX (`todo_side`)."""
    import pyspark.sql.functions as F

    return F.broadcast(ids) if n <= BROADCAST_TODO_MAX else ids


def not_at_ingest(ctx: StageContext, table: str, ledger: str = "bronze/logs", where=None):
    """The stage's new logs ingest did not compute `table` (a DERIVED_TABLES one) for, cached, and
    how many: those whose ledger row's `row_counts` lacks `table`'s name (a log streamed to disk, a
    lake ingested before the table, its `ingest.` switch off) and, when `where` (a Column over
    `table`) is given, those with a row of `table` it fails (computed with other settings). Every
    new log when `table` does not exist (deleted, to recompute with this version's code)."""
    import pyspark.sql.functions as F

    if not ctx.exists(table):
        rest = ctx.todo
    else:
        name = table.split("/", 1)[1]
        done = (
            ctx.read(ledger).where(F.map_contains_key("row_counts", F.lit(name))).select("log_id")
        )
        rest = ctx.todo.join(done, "log_id", "left_anti")
        if where is not None:
            rest = rest.unionByName(ctx.read(table).where(~where).select("log_id")).distinct()
    rest = rest.cache()
    return rest, rest.count()


def read_for(ctx: StageContext, table: str, ids, n: int):
    """A declared input restricted to the stage's new logs (`ctx.read`) and then to the `n` logs of
    `ids` (a broadcast semi join: `semi_side`); with none, planned as an empty relation: no scan."""
    import pyspark.sql.functions as F

    if not n:
        return ctx.read(table).where(F.lit(False))
    return ctx.read(table).join(semi_side(ids, n), "log_id", "left_semi")


PRUNE_MONTHS_MAX = (
    240  # job_months listed in a stage's partition filter (20 years of monthly partitions)
)
INITIAL_PARTITIONS = "spark.sql.adaptive.coalescePartitions.initialPartitionNum"
BROADCAST_TODO_MAX = (
    250_000  # new logs whose ids a stage broadcasts to filter its inputs (~20 MB of ids)
)


def shuffle_partitions_for(n_logs: int | None, logs_per_partition: int, configured: int) -> int:
    """The shuffle partitions AQE starts from for a stage over `n_logs` new logs: the configured
    `spark.sql.shuffle.partitions`, or one per `logs_per_partition` logs when that is more."""
    if not n_logs or logs_per_partition <= 0:
        return configured
    return max(configured, -(-n_logs // logs_per_partition))


def scale_shuffles(spark, logs_per_partition: int, n_logs: int | None):
    """Set AQE's initial shuffle partitions for this stage's size; returns the undo.

    AQE only merges partitions (`coalescePartitions`), never splits them, so with the 4 that suit a
    nightly drop on local[2], a large backfill sorts tens of millions of segments per task and spills."""
    configured = int(spark.conf.get("spark.sql.shuffle.partitions"))
    n = shuffle_partitions_for(n_logs, logs_per_partition, configured)
    if spark.conf.get(INITIAL_PARTITIONS, None) is not None or n == configured:
        return lambda: None  # set by the site (or not needed): leave it
    spark.conf.set(INITIAL_PARTITIONS, str(n))
    return lambda: spark.conf.unset(INITIAL_PARTITIONS)


def _run_pure(mod, ctx: StageContext) -> dict:
    """Read every declared input, transform, commit every non-empty output in declared order."""
    inputs = {t: ctx.read(t) for t in ctx.stage.tables_in}
    return commit_outputs(mod, ctx, mod.transform(inputs, ctx.conf))


def commit_outputs(mod, ctx: StageContext, outputs: dict, facts: dict | None = None) -> dict:
    """Cache and count each output DataFrame, then commit the non-empty ones in declared order;
    the stage's summary (`facts` and `summarize`'s added). A pure stage ends here; so may an
    `execute` stage that builds its outputs itself."""
    stage, echo = ctx.stage, ctx.echo
    extra = sorted(set(outputs) - set(stage.outputs))
    if extra:
        raise UndeclaredTable(
            f"stage {stage.name!r} returned {', '.join(extra)}, which pipeline.yaml does not "
            f"declare as outputs ({', '.join(stage.outputs)})"
        )
    cached = {t: outputs[t].cache() for t in stage.tables_out if t in outputs}
    rows = {t: df.count() for t, df in cached.items()}
    summary = {"logs": ctx.n_todo, "rows": rows, **(facts or {})}
    if hasattr(mod, "summarize"):
        summary.update(mod.summarize(cached))
    for t, df in cached.items():
        if rows[t]:  # nothing to commit for an empty output (e.g. logs with no timed I/O)
            ctx.write(t, df)
    for df in cached.values():
        df.unpersist()
    counted = ", ".join(f"{t} {n:,} rows" for t, n in rows.items())
    echo(
        f"[{stage.name}] {ctx.n_todo if ctx.n_todo is not None else 'all'} "
        f"{'new logs' if ctx.n_todo is not None else 'logs'}: {counted}"
    )
    return summary
