"""gold/tuning_advice rows: the three kinds of advice, assembled in Spark.

- `what_if_rows`  per data file, the model-based what-if of `features/what_if.py`, run on the
                  executors (`mapInPandas`) with the registered champions shipped as files, once
                  per distinct model input (`KEY`) and joined back to its files (`iolake/per_key.py`);
- `stripe_rows`   per Lustre job, DCA-IO's stripe setting (`features/stripe_advice.py`) from the
                  lake's run history: the history before the jobs' earliest start summed up in
                  Spark (`stripe_prior`), the jobs from there on replayed on the driver;
- `tag_rows`      per bottleneck tag, its recommendation for the job's file systems
                  (`schemas.bottleneck_tags.recommendation`: Lustre commands only on Lustre) and, where a what-if
                  addresses it (`TAG_DIMENSION`), the best predicted gain of changing that alone.

Recommendations (one text per tag, kept with its stable code in `schemas.bottleneck_tags.CATALOG`)
follow Drishti's (hpc-io/drishti-io, its `recommendation` texts per trigger) and the keynote's common
fixes; every text names what to set.
"""

from __future__ import annotations

import os

import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.window import Window

from features import what_if
from schemas import GOLD
from schemas.bottleneck_tags import CATALOG, GPFS, LUSTRE, NO_ISSUE, recommendation
from schemas.placement_labels import FEATURES

OUT = GOLD["tuning_advice"]
PROVENANCE = ("model_alias", "trained_on", "training_origin")  # models/provenance.py, per model row

RECOMMENDATIONS = {tag: t.recommendation for tag, t in CATALOG.items() if tag != NO_ISSUE}
FS_VARIANTS = ((False, False), (True, False), (False, True), (True, True))  # (on Lustre, on GPFS)
TAG_DIMENSION = {
    "small_reads": "transfer_size",
    "small_writes": "transfer_size",
    "no_collective_shared_reads": "api",
    "no_collective_shared_writes": "api",
    "rank0_heavy": "api",
    "metadata_heavy": "layout",
}

CHUNK_FILES = 500  # files (or keys) searched per model call on an executor

# What the search reads of a file: what_if.options / setting / apply / _job_equivalent read interface,
# collective, file_per_process, transfer_size, rw_per_open, n_ranks, nprocs and tier, and the models
# read their `features` (FEATURES; and tier, the bandwidth model). Never a file's name, ids or bytes:
# files alike in these get the same answer, so the search runs once per distinct KEY.
KEY = (*FEATURES, "tier")
PER_FILE = ("log_id", "job_month", "record_id", "file_name")

ANSWER = T.StructType(
    [
        T.StructField("current", T.StringType()),
        T.StructField("advised", T.StringType()),
        T.StructField("change", T.StringType()),
        T.StructField("now", T.DoubleType()),
        T.StructField("best", T.DoubleType()),
        T.StructField("speedup", T.DoubleType()),
        T.StructField("evidence", T.ArrayType(T.StringType())),
        T.StructField("message", T.StringType()),
        T.StructField("is_advice", T.BooleanType()),
        T.StructField("alone", T.MapType(T.StringType(), T.DoubleType())),
    ]
)
WHAT_IF_SCHEMA = T.StructType(
    [
        T.StructField("log_id", T.StringType()),
        T.StructField("job_month", T.StringType()),
        T.StructField("record_id", T.LongType()),
        T.StructField("file_name", T.StringType()),
        *ANSWER.fields,
        T.StructField("bytes", T.LongType()),
    ]
)


def ship_model(spark, uri: str) -> str:
    """Download a registered model, zip it and add the archive to the Spark job's files (a directory
    cannot be added on a cluster master); returns the name executors open with `_load`."""
    import atexit
    import shutil
    import tempfile

    import mlflow

    workdir = tempfile.mkdtemp(prefix="iolake-model-")  # removed when the driver exits
    atexit.register(shutil.rmtree, workdir, True)
    local = mlflow.artifacts.download_artifacts(
        artifact_uri=uri, dst_path=os.path.join(workdir, "model")
    )
    archive = shutil.make_archive(os.path.join(workdir, os.path.basename(workdir)), "zip", local)
    shutil.rmtree(local, ignore_errors=True)
    spark.sparkContext.addFile(archive)
    return os.path.basename(archive)


_LOADED: dict = {}  # per Python worker: archive name -> unwrapped model


def _load(name: str):
    """The model shipped as `name` by `ship_model`, unpacked once per Python worker."""
    if name not in _LOADED:
        import tempfile
        import zipfile

        import mlflow.pyfunc
        from pyspark import SparkFiles

        # inside Spark's per-application files folder, which Spark deletes when the application ends
        into = tempfile.mkdtemp(prefix="iolake-model-", dir=SparkFiles.getRootDirectory())
        with zipfile.ZipFile(SparkFiles.get(name)) as z:
            z.extractall(into)
        _LOADED[name] = mlflow.pyfunc.load_model(into).unwrap_python_model()
    return _LOADED[name]


def what_if_rows(
    files: DataFrame,
    space: what_if.Space,
    bandwidth_file: str,
    placement_file: str | None,
    per_key: bool = True,
) -> DataFrame:
    """Per file of `files` (silver/file_features rows), the what-if search's answer; `is_advice` marks
    the rows worth telling, `alone` holds each dimension's speed-up when changed alone.

    `per_key` (the default): the search runs once per distinct `KEY` and its answer joins back to
    every file of that key (files repeat their keys: a lake has far fewer keys than files); off:
    once per file, to check the other against (tests/jobs/test_score_advise_keys.py,
    decision record 0016 in docs/decisions/). Both give the same rows."""
    from iolake.per_key import KEY_ID, in_pandas, join_answers

    bytes_ = (
        F.coalesce(F.col("bytes_read"), F.lit(0)) + F.coalesce(F.col("bytes_written"), F.lit(0))
    ).cast("long")
    rows = files.select(*PER_FILE, *KEY, bytes_.alias("bytes"))
    if per_key:
        run = _searcher([KEY_ID], space, bandwidth_file, placement_file, check_key=True)
        out = join_answers(rows, KEY, lambda keys: in_pandas(keys, run, ANSWER))
    else:  # the search sees every column of the file, as it did: a column outside KEY that mattered would show
        carry = [*PER_FILE, "bytes"]
        run = _searcher(carry, space, bandwidth_file, placement_file, check_key=False)
        out = rows.mapInPandas(run, T.StructType([rows.schema[c] for c in carry] + ANSWER.fields))
    return out.select(*WHAT_IF_SCHEMA.fieldNames())


def _searcher(
    carry: list[str],
    space: what_if.Space,
    bandwidth_file: str,
    placement_file: str | None,
    check_key: bool,
):
    """The `mapInPandas` function searching every row of its batches: `carry` (passed through as it
    is) and the `ANSWER` columns; `check_key`: refuse models that read a column outside `KEY`."""

    def run(batches):
        import pandas as pd

        bw = _load(bandwidth_file)
        pl = _load(placement_file) if placement_file else None
        if check_key:
            for m, f in ((bw, bandwidth_file), (pl, placement_file)):
                outside = [c for c in getattr(m, "features", ()) if c not in KEY]
                if outside:
                    raise ValueError(
                        f"model {f} reads {outside}, outside the what-if's key {list(KEY)}: files alike "
                        f"in the key could differ in its answer; run what_if_rows with per_key=False"
                    )
        predict = lambda f: bw.predict(None, f)["predicted_bandwidth_mib_s"].to_numpy(dtype=float)  # noqa: E731
        place = (lambda f: pl.predict(None, f)) if pl is not None else None  # noqa: E731
        for batch in batches:
            for start in range(
                0, len(batch), CHUNK_FILES
            ):  # bounded memory: <= 84 candidate rows a file
                pdf = batch.iloc[start : start + CHUNK_FILES]
                answers = [
                    _answer(res, space.min_speedup, space.tier_hints)
                    for res in what_if.search(pdf, predict, space, place)
                ]
                yield pd.concat(
                    [
                        pdf[carry].reset_index(drop=True),
                        pd.DataFrame(answers, columns=ANSWER.fieldNames()),
                    ],
                    axis=1,
                )

    return run


def _answer(res: what_if.Result, min_speedup: float, tier_hints=()) -> dict:
    """One search result in the `ANSWER` columns; `tier_hints`: the site's words for tier moves."""
    import numpy as np

    ev = [
        f"{what_if.HINTS_SHORT[d]} alone: {v if d != 'transfer_size' else what_if.human_size(v)} "
        f"-> {s:.2f}x"
        for d, (v, s) in res.by_dimension.items()
        if np.isfinite(s)
    ]
    if res.placement is not None:
        ev.append(f"placement model: {res.placement[0]} (probability {res.placement[1]:.2f})")
    ok = what_if.advised(res, min_speedup)
    return {
        "current": what_if.describe(res.current),
        "advised": what_if.describe(res.best),
        "change": what_if.change(res),
        "now": _f(res.bandwidth_now),
        "best": _f(res.bandwidth_best),
        "speedup": _f(res.speedup),
        "evidence": ev,
        "message": what_if.message(res, tier_hints) if ok else "",
        "is_advice": ok,
        "alone": {d: float(s) for d, (_, s) in res.by_dimension.items() if np.isfinite(s)},
    }


def _f(x) -> float | None:
    import math

    return None if x is None or not math.isfinite(x) else float(x)


def io_procs(ff: DataFrame) -> DataFrame:
    """Per log: whether a data file is shared, and the most ranks doing I/O on one shared file."""
    data = ff.where((F.col("reads") + F.col("writes") > 0) & (F.col("interface") != "STDIO"))
    return data.groupBy("log_id").agg(
        F.max((~F.col("file_per_process")).cast("int")).cast("boolean").alias("shared"),
        F.max(F.when(~F.col("file_per_process"), F.col("n_ranks"))).alias("io_procs"),
    )


def stripe_rows(
    spark, jobs: DataFrame, ff: DataFrame, todo: DataFrame, aconf, site=None
) -> DataFrame:
    """DCA-IO's stripe setting for every job of `todo` that has Lustre files, from the history in `jobs`
    (silver/job_features, whole) and `ff` (silver/file_features, whole); the command is the site
    profile's (`site`, conf `site:`: the stripe template of the job's tier, `features/site.py`).

    The replay (`stripe_advice.advise_runs`) starts at the earliest start time of the jobs to advise
    (the cut): what the jobs before it taught DCA-IO is summed up in Spark (`stripe_prior`), so a
    night's advice replays the night, not the lake, and equals the whole replay's. Jobs with a null
    start time come last in DCA-IO's order: they are replayed only when one of them is advised."""
    import pandas as pd

    from features import stripe_advice
    from features.precedents import OUT_COLUMNS
    from features.site import stripe_command
    from iolake.spark import local_frame

    empty = spark.createDataFrame([], OUT.struct).drop("advised_with", "advised_at", *OUT_COLUMNS)
    key = list(aconf.stripe_key)
    asked = jobs.join(todo.select("log_id"), "log_id", "left_semi").where(
        F.col("stripe_count").isNotNull()
    )
    span = asked.agg(
        F.min("start_time").alias("cut"),
        F.count(F.lit(1)).alias("n"),
        F.count("start_time").alias("timed"),
    ).first()
    if not span.n:  # no job to advise has a stripe count: no stripe advice (DCA-IO's rows below)
        return empty
    start = F.col("start_time")
    if span.cut is None:  # every job to advise lacks a start time: they come after the whole lake
        before, later = start.isNotNull(), start.isNull()
    else:
        before = start < F.lit(span.cut)
        later = (start >= F.lit(span.cut)) | (
            start.isNull() if span.timed < span.n else F.lit(False)
        )
    prior = stripe_prior(jobs.where(before), ff, key)
    hist = _stripe_replay_rows(jobs.where(later), ff, key)
    if hist.empty:
        return empty
    adv = stripe_advice.advise_runs(
        hist,
        key=key,
        max_osts=aconf.lustre_osts or None,
        growth=aconf.stripe_growth,
        prior=prior,
    )
    wanted = set(todo.select("log_id").toPandas().log_id)
    adv = adv[adv.log_id.isin(wanted) & adv.current_count.notna()].merge(
        hist[["log_id", "job_month", "tiers"]], on="log_id"
    )
    if adv.empty:
        return empty
    rows = []
    for a in adv.itertuples():
        now = (
            f"stripe count {int(a.current_count)}, stripe size "
            f"{stripe_advice.size_text(int(a.current_size))}"
            if pd.notna(a.current_size)
            else f"stripe count {int(a.current_count)}"
        )
        size = stripe_advice.size_text(int(a.stripe_size))
        new = f"stripe count {int(a.stripe_count)}, stripe size {size}"
        same = now == new
        tiers = list(a.tiers) if a.tiers is not None else []
        command = stripe_command(site, int(a.stripe_count), size, tiers)
        if command is None:  # the site names no stripe command: the setting in words
            command = (
                f"set {int(a.stripe_count)} stripes of {size} on the output directory (this "
                "site's profile names no stripe command: conf site.tiers[].stripe)"
            )
        msg = f"DCA-IO ({a.phase} phase, run {a.run_number} of this application): " + (
            f"keep {now}" if same else f"{command} (this run used {now})"
        )
        row = dict.fromkeys(empty.schema.fieldNames())
        row.update(
            log_id=a.log_id,
            job_month=a.job_month,
            kind="stripe",
            item="job",
            current=now,
            advised=new,
            evidence=list(a.evidence),
            message=msg,
        )
        rows.append(row)
    return local_frame(
        spark, [tuple(r[c] for c in empty.schema.fieldNames()) for r in rows], empty.schema
    )


STRIPE_JOB_COLUMNS = (
    "log_id",
    "job_month",
    "start_time",
    "nprocs",
    "stripe_count",
    "stripe_size",
    "throughput_mib_s",
)


def _with_io_procs(runs, ff: DataFrame):
    """`runs` (pandas, a log_id and job_month per row) with each log's `shared` (null: False, as
    DCA-IO's rule phase takes a log with no shared data file) and `io_procs` (`io_procs`), read from
    `ff` (silver/file_features) in those logs' months only."""
    import pandas as pd

    from iolake.lake.delta import month_filter
    from iolake.spark import local_frame

    if runs.empty:
        return runs.assign(shared=pd.Series(dtype=bool), io_procs=pd.Series(dtype="float64"))
    ids = sorted(set(runs["log_id"]))
    logs = local_frame(
        ff.sparkSession,
        [(i,) for i in ids],
        T.StructType([T.StructField("log_id", T.StringType(), False)]),
    )
    months = sorted(set(runs["job_month"].where(runs["job_month"].notna(), None)), key=str)
    io = io_procs(
        ff.where(month_filter(list(months))).join(F.broadcast(logs), "log_id", "left_semi")
    ).toPandas()
    out = runs.merge(io, on="log_id", how="left")
    out["shared"] = out["shared"].astype("boolean").fillna(False).astype(bool)
    return out


def stripe_prior(jobs: DataFrame, ff: DataFrame, key: list):
    """DCA-IO's replay state after the jobs of `jobs` (silver/job_features rows that started before
    the cut): `stripe_advice.Prior`, aggregated in Spark, so only a few rows per application reach
    the driver: the per-(application, nprocs, stripe count, stripe size) counts and throughput sums
    (Procedure 1's sums and each application's run and skipped counts), and each application's
    first, previous and latest usable run (a throughput and a stripe count; in start_time, log_id
    order), the first with its file sharing from `ff` (the rule phase's input)."""
    import pandas as pd

    from features import stripe_advice

    cells = (
        jobs.groupBy(*key, "nprocs", "stripe_count", "stripe_size")
        .agg(
            F.count(F.lit(1)).alias("jobs"),
            F.count("throughput_mib_s").alias("tp_n"),
            F.sum("throughput_mib_s").alias("tp_sum"),
        )
        .toPandas()
    )
    own = [c for c in STRIPE_JOB_COLUMNS if c not in key]
    usable = jobs.where(
        F.col("stripe_count").isNotNull() & F.col("throughput_mib_s").isNotNull()
    ).select(*key, *own)
    order = F.struct("start_time", "log_id")
    rec = F.struct(*own)
    ends = usable.groupBy(*key).agg(
        F.min_by(rec, order).alias("first"), F.max_by(rec, order).alias("latest")
    )
    ends = ends.localCheckpoint()
    latest_ids = ends.select(F.col("latest.log_id").alias("log_id"))
    previous = (
        usable.join(F.broadcast(latest_ids), "log_id", "left_anti")
        .groupBy(*key)
        .agg(F.max_by(rec, order).alias("previous"))
    )
    picked = []
    for which, frame in (("first", ends), ("latest", ends), ("previous", previous)):
        picked.append(frame.select(*key, F.lit(which).alias("which"), f"{which}.*").toPandas())
    runs = pd.concat(picked, ignore_index=True)
    # only the first run's sharing is read (the rule phase's input): the file table is read in the
    # first runs' months, not also in the latest runs'
    first = runs["which"] == "first"
    runs = pd.concat(
        [_with_io_procs(runs[first], ff), runs[~first].assign(shared=False, io_procs=None)],
        ignore_index=True,
    )
    return stripe_advice.Prior(
        cells[[*key, *stripe_advice.CELL_COLUMNS]],
        runs[[*key, *stripe_advice.RUN_COLUMNS]],
    )


def _stripe_replay_rows(jobs: DataFrame, ff: DataFrame, key: list):
    """The jobs of `jobs` (silver/job_features rows from the cut on) that DCA-IO's replay reads, in
    pandas: those with a stripe value, each with how many of its application's jobs among `jobs`
    before it had none (`SKIPPED_BEFORE`: counted here, not gathered), its `tiers`, and its file
    sharing from `ff`."""
    from features import stripe_advice

    has_stripe = F.col("stripe_count").isNotNull() | F.col("stripe_size").isNotNull()
    earlier = (
        Window.partitionBy(*key)
        .orderBy(F.asc_nulls_last("start_time"), F.asc("log_id"))
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    kept = (
        jobs.select(*STRIPE_JOB_COLUMNS, *[k for k in key if k not in STRIPE_JOB_COLUMNS], "tiers")
        .withColumn(
            stripe_advice.SKIPPED_BEFORE,
            F.coalesce(F.sum((~has_stripe).cast("long")).over(earlier), F.lit(0)),
        )
        .where(has_stripe)
        .toPandas()
    )
    return _with_io_procs(kept, ff)


def fs_flags(ff: DataFrame, jobs: DataFrame | None = None) -> DataFrame:
    """Per log of `ff` (silver/file_features), whether any of its files is on Lustre and on GPFS
    (`fs_type`, from the log's mount table): which clauses of a tag's recommendation apply. `jobs`
    (silver/job_features) adds Lustre for a log with a Lustre stripe layout (`stripe_count`, from
    Darshan's LUSTRE module) whose paths the mount table does not resolve (a symlinked project
    directory under `/`)."""
    fs = F.lower(F.col("fs_type"))
    flags = ff.groupBy("log_id").agg(
        F.max((fs == LUSTRE).cast("int")).alias("lu"),
        F.max((fs == GPFS).cast("int")).alias("gp"),
    )
    if jobs is not None:
        striped = jobs.where(F.col("stripe_count").isNotNull()).select(
            "log_id", F.lit(1).alias("st")
        )
        flags = flags.join(striped.dropDuplicates(["log_id"]), "log_id", "full")
    else:
        flags = flags.withColumn("st", F.lit(None).cast("int"))
    return flags.select(
        "log_id",
        (F.coalesce("lu", F.lit(0)) + F.coalesce("st", F.lit(0)) > 0).alias("on_lustre"),
        (F.coalesce("gp", F.lit(0)) > 0).alias("on_gpfs"),
    )


def tag_rows(tags: DataFrame, what_ifs: DataFrame, fs: DataFrame | None = None) -> DataFrame:
    """A row per bottleneck tag (not `no_issue`) with its recommendation for the job's file systems
    (`fs`: `fs_flags`; without it, or for a log it lacks, the words for any file system:
    `schemas.bottleneck_tags.recommendation`) and, where a what-if dimension addresses it, the best
    predicted speed-up of changing that dimension alone on one of the job's files."""
    recs = tags.sparkSession.createDataFrame(
        [
            (t, lu, gp, recommendation(t, [LUSTRE] * lu + [GPFS] * gp), TAG_DIMENSION.get(t))
            for t in RECOMMENDATIONS
            for lu, gp in FS_VARIANTS
        ],
        "tag string, on_lustre boolean, on_gpfs boolean, rec string, dim string",
    )
    if fs is None:
        fs = tags.sparkSession.createDataFrame(
            [], "log_id string, on_lustre boolean, on_gpfs boolean"
        )
    flags = [F.coalesce(F.col(c), F.lit(False)).alias(c) for c in ("on_lustre", "on_gpfs")]
    tags = tags.join(fs.select("log_id", "on_lustre", "on_gpfs"), "log_id", "left").select(
        *tags.columns, *flags
    )
    gains = (
        what_ifs.select("log_id", F.explode("alone").alias("dim", "gain"))
        .groupBy("log_id", "dim")
        .agg(F.max("gain").alias("gain"))
    )
    t = (
        tags.where(F.col("tag") != NO_ISSUE)
        .join(recs, ["tag", "on_lustre", "on_gpfs"])
        .join(gains, ["log_id", "dim"], "left")
    )
    msg = F.concat(
        F.col("tag"),
        F.lit(": "),
        F.col("message"),
        F.lit(" -> "),
        F.col("rec"),
        F.when(
            F.col("gain") > 1,
            F.format_string(
                " (predicted %.2fx changing the %s alone)",
                F.col("gain"),
                F.regexp_replace("dim", "_", " "),
            ),
        ).otherwise(F.lit("")),
    )
    evidence = F.concat(
        F.array(
            F.format_string(
                "%s = %.3g (threshold %s = %s)",
                F.col("metric"),
                F.col("value"),
                F.coalesce(F.col("threshold_name"), F.lit("-")),
                F.coalesce(F.col("threshold").cast("string"), F.lit("-")),
            )
        ),
        F.col("evidence"),
    )
    return t.select(
        "log_id",
        "job_month",
        F.lit("tag").alias("kind"),
        F.col("tag").alias("item"),
        F.lit(None).cast("long").alias("record_id"),
        F.lit(None).cast("string").alias("file_name"),
        F.lit(None).cast("string").alias("current"),
        F.lit(None).cast("string").alias("advised"),
        F.lit(None).cast("double").alias("predicted_bandwidth_now_mib_s"),
        F.lit(None).cast("double").alias("predicted_bandwidth_advised_mib_s"),
        F.when(F.col("gain") > 0, F.col("gain")).alias("predicted_speedup"),
        F.lit(None).cast("double").alias("measured_speedup"),
        F.lit(None).cast("string").alias("model_name"),
        F.lit(None).cast("string").alias("model_version"),
        *[F.lit(None).cast("string").alias(c) for c in PROVENANCE],
        evidence.alias("evidence"),
        msg.alias("message"),
    )


def fill_file(message, file_name):
    """A message with a stage template's FILE / NAME (`features/site.py`) replaced by the file's path
    and base name (Spark columns)."""
    from features.site import FILE, NAME

    base = F.regexp_extract(file_name, r"([^/]*)$", 1)
    filled = F.replace(message, F.lit(FILE), F.coalesce(file_name, F.lit(FILE)))
    return F.replace(filled, F.lit(NAME), F.coalesce(base, F.lit(NAME)))


def what_if_advice(
    what_ifs: DataFrame, model_name: str, model_version: str, prov=None, placement_prov=None
) -> DataFrame:
    """The what-if rows worth telling, in the table's columns: files of a job given the same change
    (e.g. "tier bb; transfer size 1 MiB") make one row — a file-per-process job has thousands alike —
    shown by its file moving the most bytes (of files moving as many, the highest record id: the
    same file whatever order the rows arrive in), with the number of files and bytes it covers; a staging
    command's file is that file. `prov` (`models.provenance.Provenance` of the bandwidth model) fills
    the provenance columns; `placement_prov`, of the placement model that picked tiers, is evidence."""
    w = what_ifs.where("is_advice")
    top = F.max_by(
        F.struct(
            "record_id",
            "file_name",
            "current",
            "advised",
            "now",
            "best",
            "speedup",
            "evidence",
            "message",
        ),
        F.struct("bytes", "record_id"),  # ties in bytes broken by record_id, not by row order
    )
    g = w.groupBy("log_id", "job_month", "change").agg(
        top.alias("t"), F.count(F.lit(1)).alias("files"), F.sum("bytes").alias("bytes")
    )
    more = F.when(
        F.col("files") > 1,
        F.format_string(" and %d more file(s) with the same setting", F.col("files") - 1),
    ).otherwise(F.lit(""))
    return g.select(
        "log_id",
        "job_month",
        F.lit("what_if").alias("kind"),
        F.col("t.record_id").cast("string").alias("item"),
        F.col("t.record_id").alias("record_id"),
        F.col("t.file_name").alias("file_name"),
        F.col("t.current").alias("current"),
        F.col("t.advised").alias("advised"),
        F.col("t.now").alias("predicted_bandwidth_now_mib_s"),
        F.col("t.best").alias("predicted_bandwidth_advised_mib_s"),
        F.col("t.speedup").alias("predicted_speedup"),
        F.lit(None).cast("double").alias("measured_speedup"),
        F.lit(model_name).alias("model_name"),
        F.lit(model_version).alias("model_version"),
        F.lit(prov.alias if prov else None).cast("string").alias("model_alias"),
        F.lit(prov.trained_on if prov else None).cast("string").alias("trained_on"),
        F.lit(prov.origin if prov else None).cast("string").alias("training_origin"),
        F.concat(
            F.array(
                F.format_string(
                    "%d file(s), %d bytes with this setting", F.col("files"), F.col("bytes")
                )
            ),
            F.col("t.evidence"),
            F.array(
                *(
                    [F.lit(f"tier picked by {placement_prov.label()}, {placement_prov.short()}")]
                    if placement_prov is not None
                    else []
                )
            ).cast("array<string>"),
        ).alias("evidence"),
        F.concat(
            fill_file(F.col("t.message"), F.col("t.file_name")),
            F.lit(" — "),
            F.col("t.file_name"),
            more,
        ).alias("message"),
    )


def measured_gain(advice: DataFrame, ff: DataFrame, files: DataFrame | None = None) -> DataFrame:
    """`measured_speedup` of the what-if rows that only move a file to another tier: the lake's mean
    file bandwidth of data files with the file's features on the advised tier over that on its own
    tier, when the lake traced both (`ff`: silver/file_features, whole); null elsewhere. `files`:
    the advised files' own rows (their features and tier), any rows of silver/file_features that
    hold them (the night's months: not a second scan of the whole table); `ff` by default."""
    from features.placement_labels import data_files

    files = ff if files is None else files
    # computed once (a row per feature set and tier): both sides of the self-join below read it,
    # and each would otherwise aggregate the whole file table again
    means = (
        data_files(ff)
        .groupBy(*FEATURES, "tier")
        .agg(F.avg("bandwidth_mib_s").alias("bw"), F.count(F.lit(1)).alias("n"))
        .localCheckpoint()
    )
    moves = (
        advice.where(F.col("kind") == "what_if")
        .select("log_id", "record_id", "advised")
        .join(
            files.select("log_id", "record_id", *FEATURES, F.col("tier").alias("tier_now")),
            ["log_id", "record_id"],
        )
        .withColumn("tier_to", F.regexp_extract("advised", r", on (\S+)$", 1))
    )

    def side(
        name: str,
    ) -> DataFrame:  # the means under other column names: a self-join needs them apart
        return means.select(
            *[F.col(c).alias(f"{name}_{c}") for c in FEATURES],
            F.col("tier").alias(f"{name}_tier"),
            F.col("bw").alias(f"bw_{name}"),
            F.col("n").alias(f"n_{name}"),
        )

    now, to = side("now"), side("to")
    m = moves.join(
        now,
        [moves[c].eqNullSafe(now[f"now_{c}"]) for c in FEATURES] + [moves.tier_now == now.now_tier],
    )
    m = m.join(to, [m[c].eqNullSafe(to[f"to_{c}"]) for c in FEATURES] + [m.tier_to == to.to_tier])
    gains = m.select(
        "log_id",
        "record_id",
        (F.col("bw_to") / F.col("bw_now")).alias("measured_speedup"),
        F.format_string(
            "measured in this lake: %.1f MiB/s on the advised tier (%d files) vs %.1f MiB/s "
            "on this one (%d files)",
            "bw_to",
            "n_to",
            "bw_now",
            "n_now",
        ).alias("fact"),
    )
    only_tier = (
        (F.col("kind") == "what_if")
        & F.col("current").isNotNull()
        & (
            F.regexp_replace("current", r", on \S+$", "")
            == F.regexp_replace("advised", r", on \S+$", "")
        )
    )
    out = advice.drop("measured_speedup").join(gains, ["log_id", "record_id"], "left")
    return (
        out.withColumn("measured_speedup", F.when(only_tier, F.col("measured_speedup")))
        .withColumn(
            "evidence",
            F.when(
                only_tier & F.col("fact").isNotNull(), F.concat("evidence", F.array("fact"))
            ).otherwise(F.col("evidence")),
        )
        .drop("fact")
    )


def none_rows(todo: DataFrame, advice: DataFrame) -> DataFrame:
    """A `none` row for every job of `todo` (log_id, job_month) no advice row names."""
    bare = todo.join(advice.select("log_id").distinct(), "log_id", "left_anti")
    return bare.select(
        "log_id",
        "job_month",
        F.lit("none").alias("kind"),
        F.lit("job").alias("item"),
        *[
            F.lit(None).cast(OUT.struct[c].dataType).alias(c)
            for c in (
                "record_id",
                "file_name",
                "current",
                "advised",
                "predicted_bandwidth_now_mib_s",
                "predicted_bandwidth_advised_mib_s",
                "predicted_speedup",
                "measured_speedup",
                "model_name",
                "model_version",
                *PROVENANCE,
            )
        ],
        F.array().cast("array<string>").alias("evidence"),
        F.lit(
            "nothing to change: no what-if reaches the threshold, no tag fired, no Lustre stripe "
            "advice"
        ).alias("message"),
    )


def assemble(
    spark,
    conf,
    todo: DataFrame,
    ff: DataFrame,
    tags: DataFrame,
    history_jobs: DataFrame,
    history_ff: DataFrame,
    bandwidth_mv=None,
    placement_mv=None,
    app_runs: DataFrame | None = None,
    jobs_now: DataFrame | None = None,
    ff_now: DataFrame | None = None,
) -> DataFrame:
    """Every advice row of the jobs in `todo` (log_id, job_month), in gold/tuning_advice's columns:
    what-ifs of their data files in `ff` (with the bandwidth champion `bandwidth_mv`; the placement
    champion `placement_mv` picks tiers under `advise.tier_from: placement`), DCA-IO stripe rows from
    `history_jobs` / `history_ff` (the whole silver job and file features), the recommendations of
    their `tags`, a `none` row for a job with nothing else. Shared by the advise stage and `iolake advise`.
    Commands come from the site profile (conf `site:`); model rows name the model's provenance.
    `app_runs` (gold/app_runs, whole; None: no precedents) gives each what-if, stripe and tag row its
    precedent (`features/precedents.py`), from the runs of the advised jobs' applications only.
    `jobs_now` and `ff_now`: the rows of `history_jobs` and `history_ff` that hold `todo`'s jobs (the
    advise stage passes their months' rows), for what is read of those jobs alone (the tags'
    file-system flags, the advised files' tiers); the whole history frames by default."""
    from features import precedents
    from features.placement_labels import data_files
    from models import provenance

    parts = []
    if bandwidth_mv is not None:
        bw = ship_model(spark, f"models:/{bandwidth_mv.name}/{bandwidth_mv.version}")
        space = what_if.Space.from_conf(
            conf.advise, model_tiers(bandwidth_mv) or what_if.Space().tiers, conf.site
        )
        use_place = placement_mv is not None and conf.advise.tier_from == "placement"
        pl = (
            ship_model(spark, f"models:/{placement_mv.name}/{placement_mv.version}")
            if use_place
            else None
        )
        files = data_files(ff, need_bandwidth=False).join(
            todo.select("log_id"), "log_id", "left_semi"
        )
        what_ifs = what_if_rows(files.where(F.col("transfer_size") > 0), space, bw, pl).cache()
        alias = conf.models.alias
        prov = provenance.of_version(bandwidth_mv, alias)
        pl_prov = provenance.of_version(placement_mv, alias) if use_place else None
        parts.append(
            measured_gain(
                what_if_advice(
                    what_ifs, bandwidth_mv.name, str(bandwidth_mv.version), prov, pl_prov
                ),
                history_ff,
                ff_now,
            )
        )
    else:
        what_ifs = spark.createDataFrame([], WHAT_IF_SCHEMA)
    parts.append(stripe_rows(spark, history_jobs, history_ff, todo, conf.advise, conf.site))
    mine = todo.select("log_id")
    parts.append(
        tag_rows(
            tags.join(mine, "log_id", "left_semi"),
            what_ifs,
            fs_flags(
                ff.join(mine, "log_id", "left_semi"),
                (history_jobs if jobs_now is None else jobs_now).join(mine, "log_id", "left_semi"),
            ),
        )
    )
    rows = parts[0]
    for p in parts[1:]:
        rows = rows.unionByName(p)
    # computed once: the precedents gather them, join them back and name the jobs they leave
    # bare, and each of those reads would otherwise rerun the what-ifs' measured gains (the
    # lake's file features, whole) from the start
    rows = rows.localCheckpoint()
    key_parts = list(conf.watch.key_parts)
    history = (
        precedents.history_for(todo, app_runs, history_jobs, history_ff, key_parts)
        if app_runs is not None
        else None
    )
    rows = precedents.attach(rows, history, key_parts, TAG_DIMENSION)
    return rows.unionByName(none_rows(todo, rows), allowMissingColumns=True)


def model_tiers(mv) -> list[str]:
    """The tiers a bandwidth model version was trained on (its pyfunc's `tiers`)."""
    from models.registry import load_version

    return list(getattr(load_version(mv.name, mv.version).unwrap_python_model(), "tiers", []) or [])


def finish(advice: DataFrame, advised_with: str) -> DataFrame:
    """The rows in gold/tuning_advice's columns, stamped with the pass; a column the rows lack (the
    precedent columns of rows assembled without them) is null."""
    for f in OUT.struct.fields:
        if f.name not in advice.columns and f.name not in ("advised_with", "advised_at"):
            advice = advice.withColumn(f.name, F.lit(None).cast(f.dataType))
    return (
        advice.withColumn("advised_with", F.lit(advised_with))
        .withColumn("advised_at", F.current_timestamp())
        .select(*[F.col(f.name).cast(f.dataType) for f in OUT.struct.fields])
    )
