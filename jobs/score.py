"""score: silver/file_features, silver/job_features -> the three prediction tables.

Reads:  silver/file_features, silver/job_features, the predictions so far;
        `models:/iolake-placement@ALIAS`, `models:/iolake-bandwidth@ALIAS`,
        `models:/iolake-job-bandwidth@ALIAS` (ALIAS: `models.alias`, the one `train` promotes to).
Writes: gold/placement_predictions, gold/bandwidth_predictions (per file: its tier's bandwidth,
        every tier's, the best tier and the speed-up of moving there),
        gold/job_bandwidth_predictions (the same per job), insert-only on (log, [record,] model
        name, model version): every log not yet scored by that model version is scored once
        (anti-join on (log_id, model_version)), so a re-run scores nothing twice and a newly
        promoted version rescores everything. Where unscored rows can be is read from a mark on
        each table (`months_to_score`): with the same model version, a night scores in the months
        committed since the last run, not across the lake.
Models run in Spark through `mlflow.pyfunc.spark_udf`; every row names the model, version and alias
and what it was trained on (`models/provenance.py`). The
per-file models run once per distinct row of their signature columns, joined back to the files.
"""

from __future__ import annotations

import sys

from iolake.cli import entry_points

FF = "silver/file_features"


class SchemaDrift(ValueError):
    pass


def signature_columns(model_uri: str) -> list[str]:
    from mlflow.models import get_model_info

    sig = get_model_info(model_uri).signature
    return [c.name for c in sig.inputs.inputs]


def check_columns(df, needed: list[str], model: str) -> None:
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise SchemaDrift(
            f"{model}: the features lack columns the model's signature needs: {', '.join(missing)} "
            f"(features have: {', '.join(df.columns)})"
        )


def todo(candidates, done_table, version: str):
    """Rows of logs `done_table` has not scored with this model version (anti-join on log_id, version)."""
    import pyspark.sql.functions as F

    done = done_table.where(F.col("model_version") == version).select("log_id").distinct()
    return candidates.join(done, "log_id", "left_anti")


def _result_type(model_uri: str) -> tuple[str, list[str]]:
    """The model's output columns as a Spark DDL struct (from its signature) and their names."""
    from mlflow.models import get_model_info

    kinds = {
        "string": "string",
        "double": "double",
        "float": "double",
        "long": "bigint",
        "integer": "int",
        "boolean": "boolean",
    }
    cols = get_model_info(model_uri).signature.outputs.inputs
    names = [c.name for c in cols]
    return ", ".join(f"{c.name} {kinds.get(c.type.name, 'string')}" for c in cols), names


# model output column -> table column (the per-job table speaks of throughput)
RENAMES = {
    "job_bandwidth_predictions": {
        "predicted_bandwidth_mib_s": "predicted_throughput_mib_s",
        "bandwidth_by_tier": "throughput_by_tier",
        "best_bandwidth_mib_s": "best_throughput_mib_s",
    }
}


def predict(
    spark, df, model_uri: str, name: str, version: str, spec, per_key: bool = True, prov=None
):
    """Score `df` with the model in Spark; `spec`'s columns, with model name and version on every row
    and, given `prov` (`models.provenance.Provenance`), its alias and what it was trained on.
    A JSON {tier: value} output becomes a map column.

    `per_key` (the default): the model runs once per distinct row of its signature columns, and the
    outputs join back to every row of `df` (`iolake/per_key.py`): files repeat their model inputs
    (far fewer distinct rows than files). Off: once per row (the per-job table,
    whose rows are nearly all distinct; and the check of the other way)."""
    import mlflow.pyfunc
    import pyspark.sql.functions as F
    from pyspark.sql import types as T

    from iolake.per_key import join_answers

    cols = signature_columns(model_uri)
    check_columns(df, cols, f"{name} v{version}")
    result_type, outputs = _result_type(model_uri)
    udf = mlflow.pyfunc.spark_udf(spark, model_uri, result_type=result_type, env_manager="local")
    renames = RENAMES.get(spec.name, {})
    made = {renames.get(o, o): o for o in outputs if renames.get(o, o) in spec.struct.fieldNames()}

    def score(
        rows,
    ):  # rows' columns, the model's outputs in spec's names and types in place of any alike
        def value(target):
            v = F.col(f"_p.{made[target]}")
            return (
                F.from_json(v, spec.struct[target].dataType)
                if isinstance(spec.struct[target].dataType, T.MapType)
                else v
            )

        p = rows.withColumn("_p", udf(F.struct(*[F.col(c) for c in cols])))
        return p.select(
            *[c for c in rows.columns if c not in made], *[value(t).alias(t) for t in made]
        )

    scored = join_answers(df, cols, score) if per_key else score(df)
    for f in spec.struct.fields:  # columns an older model version does not output
        if f.name not in scored.columns:
            scored = scored.withColumn(f.name, F.lit(None).cast(f.dataType))
    if prov is not None:
        scored = (
            scored.withColumn("model_alias", F.lit(prov.alias))
            .withColumn("trained_on", F.lit(prov.trained_on))
            .withColumn("training_origin", F.lit(prov.origin))
        )
    if "efficiency" in spec.struct.fieldNames():
        scored = scored.withColumn("efficiency", efficiency_col(prov))
    return (
        scored.withColumn("model_name", F.lit(name))
        .withColumn("model_version", F.lit(str(version)))
        .withColumn("scored_at", F.current_timestamp())
        .select(*[F.col(f.name).cast(f.dataType) for f in spec.struct.fields])
    )


def efficiency_col(prov):
    """measured / predicted throughput (gold/job_bandwidth_predictions.efficiency): the share of
    what the model expects for the job's pattern on its file system that the job got. Null unless
    the model was trained on this lake (`prov.origin` `lake`: a benchmark machine's expectation
    says nothing of this site's jobs), and unless both throughputs are positive."""
    import pyspark.sql.functions as F

    measured, predicted = F.col("throughput_mib_s"), F.col("predicted_throughput_mib_s")
    if prov is None or prov.origin != "lake":
        return F.lit(None).cast("double")
    return F.when((measured > 0) & (predicted > 0), measured / predicted)


def months_to_score(ctx, source: str, table: str, version: str) -> tuple[list | None, dict]:
    """(months, mark): the job_months where rows of `source` (silver/file_features or
    silver/job_features) can lack a prediction of model `version` in `table` (None: every month;
    []: none), and the mark to set on `table` once they are scored.

    As advise finds its jobs (decision 0051): the mark (table property `iolake.newLogs.score.NAME`)
    holds the versions of `source` and `table` the last successful scoring started from and the
    model version it scored with. With the same version, only the months committed to `source`
    since, or removed from `table` since, can hold work; another version scores every month again,
    and so does every case the mark cannot tell (no mark, a rebuilt table, commits gone from the
    log)."""
    from iolake.lake import changes
    from iolake.runner import PRUNE_MONTHS_MAX
    from schemas import OPS

    spark, root = ctx.spark, ctx.conf.lake.root
    src, out = ctx.spec(source, "input"), ctx.spec(table, "input")
    stage = mark_name(table)
    old = changes.read_mark(spark, out, root, stage)
    months, mark = changes.months_to_check(
        spark, src, out, OPS["empty_logs"], root, stage, PRUNE_MONTHS_MAX, old=old
    )
    mark["model_version"] = version
    if (old or {}).get("model_version") != version:
        months = None
    return months, mark


def mark_name(table: str) -> str:
    """The name `table`'s scoring mark is kept under (`iolake.lake.changes.mark_key`)."""
    return "score." + table.split("/")[-1]


def _score_one(ctx, name, table, candidates, per_key: bool = True, source: str = FF):
    """Score the rows of `candidates` (rows of `source`) that `table` lacks for the champion of
    `name`; (rows scored, the months looked in: None for every month)."""
    from iolake.lake.delta import month_filter, months_text
    from iolake.runner import set_mark
    from models import provenance
    from models.registry import version_by_alias

    conf = ctx.conf
    spec = ctx.spec(table, "output")
    mv = version_by_alias(name, conf.models.alias)
    uri = f"models:/{name}/{mv.version}"
    what = "jobs" if table.endswith("job_bandwidth_predictions") else "files"
    months, mark = months_to_score(ctx, source, table, str(mv.version))
    if months == []:  # nothing committed since the mark, the same version: it still holds
        ctx.echo(f"[score] {name}@{conf.models.alias} (v{mv.version}): every {what[:-1]} scored")
        return 0, months
    done = ctx.read(table)
    if months is not None:
        candidates, done = candidates.where(month_filter(months)), done.where(month_filter(months))
    new = todo(candidates, done, str(mv.version)).cache()
    n = new.count()
    if n:
        prov = provenance.of_version(mv, conf.models.alias)
        ctx.write(table, predict(ctx.spark, new, uri, name, str(mv.version), spec, per_key, prov))
    new.unpersist()
    set_mark(ctx.spark, conf, mark_name(table), spec, mark)
    where = "" if months is None else f" (looked for in {months_text(months)})"
    ctx.echo(f"[score] {name}@{conf.models.alias} (v{mv.version}): {n} {what} scored{where}")
    return n, months


def _job_candidates(ctx):
    """silver/job_features rows with the per-job model's columns; `tier` is the job's single tier,
    `mixed` when its files span several, `unknown` when none has a tier."""
    import pyspark.sql.functions as F

    from models.bandwidth import JOB_NUMERIC

    jf = ctx.read("silver/job_features")
    tier = (
        F.when(F.size("tiers") == 1, F.col("tiers")[0])
        .when(F.size("tiers") > 1, F.lit("mixed"))
        .otherwise(F.lit("unknown"))
    )
    return jf.withColumn("tier", tier).na.fill(0, [*JOB_NUMERIC, "seq_pct"])


def execute(ctx) -> dict:
    from features.placement_labels import data_files
    from models import tracking
    from models.registry import ModelAliasMissing

    conf = ctx.conf
    if not ctx.exists(FF):
        ctx.echo("[score] no silver/file_features yet")
        return {"placement": 0, "bandwidth": 0, "job_bandwidth": 0}
    tracking.configure(conf)
    candidates = data_files(
        ctx.read(FF), need_bandwidth=False
    )  # every data file, whatever the tracer
    summary = {}
    # per file: scored per distinct model input; per job: per row (a job's inputs are nearly its own)
    jobs = (
        (
            "placement",
            conf.models.placement_model,
            "gold/placement_predictions",
            lambda: candidates,
            True,
        ),
        (
            "bandwidth",
            conf.models.bandwidth_model,
            "gold/bandwidth_predictions",
            lambda: candidates,
            True,
        ),
        (
            "job_bandwidth",
            conf.models.job_bandwidth_model,
            "gold/job_bandwidth_predictions",
            lambda: _job_candidates(ctx) if ctx.exists("silver/job_features") else None,
            False,
        ),
    )
    placement_months = None
    for key, name, table, rows, per_key in jobs:
        try:
            df = rows()
            if df is None:
                summary[key] = 0
                continue
            source = "silver/job_features" if key == "job_bandwidth" else FF
            summary[key], months = _score_one(ctx, name, table, df, per_key, source)
            if key == "placement":
                placement_months = months
        except ModelAliasMissing as e:
            ctx.echo(f"[score] skipped {name}: {e}")
            summary[key] = 0
    try:
        if placement_months != []:
            summary["lake_check"] = lake_check(ctx, placement_months)
    except ModelAliasMissing:
        pass
    return summary


def lake_check(ctx, months: list | None = None) -> dict | None:
    """The champion's predictions against the tier gaps the lake itself measured (PrismIO §VII:
    train on a benchmark, apply to the lake): every scored data file whose feature group was traced
    on both tiers has a lake label (features/placement_labels.transform, over the whole lake);
    accuracy over those files beside the best constant answer. `months`: the scored files of those
    job_months only (the months this run scored in); None: every scored file. None when the lake
    measured no tier gap."""
    import pyspark.sql.functions as F

    from features import placement_labels
    from iolake.lake.delta import month_filter, months_text
    from models.registry import version_by_alias
    from schemas.placement_labels import FEATURES

    conf = ctx.conf
    name = conf.models.placement_model
    mv = version_by_alias(name, conf.models.alias)
    lake = placement_labels.transform(ctx.read(FF), ctx.read("bronze/logs"), conf.models)
    pred, ff = ctx.read("gold/placement_predictions"), ctx.read(FF)
    if months is not None:
        pred, ff = pred.where(month_filter(months)), ff.where(month_filter(months))
    pred = pred.where(F.col("model_version") == str(mv.version)).select(
        "log_id", "record_id", "predicted_tier"
    )
    files = ff.select("log_id", "record_id", *FEATURES).join(pred, ["log_id", "record_id"])
    cond = [files[c].eqNullSafe(lake[c]) for c in FEATURES]
    both = files.join(lake.select(*FEATURES, F.col("best_tier").alias("lake_tier")), cond).select(
        "predicted_tier", "lake_tier"
    )
    facts = (
        both.groupBy()
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum((F.col("predicted_tier") == F.col("lake_tier")).cast("int")).alias("hits"),
            F.sum((F.col("lake_tier") == "bb").cast("int")).alias("bb"),
        )
        .first()
    )
    if not facts.n:
        return None
    out = {
        "files": facts.n,
        "accuracy": facts.hits / facts.n,
        "best_constant": max(facts.bb, facts.n - facts.bb) / facts.n,
    }
    scope = "" if months is None else f" of {months_text(months)}"
    ctx.echo(
        f"[score] {name} v{mv.version} on the {out['files']} scored files{scope} whose tier gap the "
        f"lake measured (feature groups traced on both tiers): accuracy {out['accuracy']:.3f} "
        f"(best constant answer {out['best_constant']:.3f})"
    )
    return out


run, main = entry_points("score")


if __name__ == "__main__":
    sys.exit(main())
