"""score: silver/file_features -> gold/placement_predictions, gold/bandwidth_predictions.

Reads:  silver/file_features, the predictions so far; `models:/iolake-placement@ALIAS`,
        `models:/iolake-bandwidth@ALIAS` (ALIAS: `models.alias`, the one `train` promotes to).
Writes: gold/placement_predictions, gold/bandwidth_predictions, insert-only on
        (log_id, record_id, model_name, model_version): every data file not yet scored by that
        model version is scored once (anti-join on (log_id, model_version)), so a re-run scores
        nothing twice and a newly promoted version rescores everything.
Models run in Spark through `mlflow.pyfunc.spark_udf`; every row names the model and version.
"""
from __future__ import annotations

import sys

from iolake.runner import entry_points

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
        raise SchemaDrift(f"{model}: the features lack columns the model's signature needs: {', '.join(missing)} "
                          f"(features have: {', '.join(df.columns)})")


def todo(candidates, done_table, version: str):
    """Rows of logs `done_table` has not scored with this model version (anti-join on log_id, version)."""
    import pyspark.sql.functions as F

    done = done_table.where(F.col("model_version") == version).select("log_id").distinct()
    return candidates.join(done, "log_id", "left_anti")


def predict(spark, df, model_uri: str, name: str, version: str, result_type: str, outputs: list[str], spec):
    """Score `df` with the model in Spark; `spec`'s columns, with model name and version on every row."""
    import mlflow.pyfunc
    import pyspark.sql.functions as F

    cols = signature_columns(model_uri)
    check_columns(df, cols, f"{name} v{version}")
    udf = mlflow.pyfunc.spark_udf(spark, model_uri, result_type=result_type, env_manager="local")
    scored = df.withColumn("_p", udf(F.struct(*[F.col(c) for c in cols])))
    for o in outputs:
        scored = scored.withColumn(o, F.col(f"_p.{o}"))
    return (scored.withColumn("model_name", F.lit(name)).withColumn("model_version", F.lit(str(version)))
            .withColumn("scored_at", F.current_timestamp())
            .select(*[F.col(f.name).cast(f.dataType) for f in spec.struct.fields]))


def _score_one(ctx, name, table, result_type, outputs, candidates) -> int:
    from models.registry import version_by_alias

    conf = ctx.conf
    spec = ctx.spec(table, "output")
    mv = version_by_alias(name, conf.models.alias)
    uri = f"models:/{name}/{mv.version}"
    new = todo(candidates, ctx.read(table), str(mv.version)).cache()
    n = new.count()
    if n:
        ctx.write(table, predict(ctx.spark, new, uri, name, str(mv.version), result_type, outputs, spec))
    new.unpersist()
    ctx.echo(f"[score] {name}@{conf.models.alias} (v{mv.version}): {n} files scored")
    return n


def execute(ctx) -> dict:
    from features.placement_labels import data_files
    from models import tracking
    from models.registry import ModelAliasMissing

    conf = ctx.conf
    if not ctx.exists(FF):
        ctx.echo("[score] no silver/file_features yet")
        return {"placement": 0, "bandwidth": 0}
    tracking.configure(conf)
    candidates = data_files(ctx.read(FF), need_bandwidth=False)  # every data file, whatever the tracer
    summary = {}
    jobs = (("placement", conf.models.placement_model, "gold/placement_predictions",
             "predicted_tier string, probability double", ["predicted_tier", "probability"]),
            ("bandwidth", conf.models.bandwidth_model, "gold/bandwidth_predictions",
             "predicted_bandwidth_mib_s double", ["predicted_bandwidth_mib_s"]))
    for key, name, table, rt, outs in jobs:
        try:
            summary[key] = _score_one(ctx, name, table, rt, outs, candidates)
        except ModelAliasMissing as e:
            ctx.echo(f"[score] skipped {name}: {e}")
            summary[key] = 0
    return summary


run, main = entry_points("score")


if __name__ == "__main__":
    sys.exit(main())
