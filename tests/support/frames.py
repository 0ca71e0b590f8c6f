"""Test frames built from the declared schemas (STYLE: one place per fact)."""

from __future__ import annotations

import datetime as dt

import pyspark.sql.types as T

from schemas import TABLES


def frame(spark, table: str, rows: list[dict], log_id: str = "L1", job_month: str = "2024-01"):
    """A DataFrame of `table`'s schema; every column a row does not name is null."""
    spec = TABLES[table]
    full = []
    for r in rows:
        r = {"log_id": log_id, "job_month": job_month, **r}
        full.append(tuple(r.get(c) for c in spec.columns))
    return spark.createDataFrame(full, spec.struct)


def bronze(spark, **tables) -> dict:
    """All bronze inputs of a silver stage: the given rows, every other table empty."""
    from schemas import BRONZE

    out = {}
    for name in BRONZE:
        out[name] = frame(spark, name, tables.get(name, []))
    return out


def interleaved(rows_by_log: dict, seed: int) -> tuple[list, list]:
    """Every log's rows ({log: [row]}) interleaved at random, each log's own rows kept in their order:
    (the rows, the log of each), as the stacked derivations may see a staged file's logs."""
    import random

    rnd, queues, out, owner = (
        random.Random(seed),
        {k: list(v) for k, v in rows_by_log.items()},
        [],
        [],
    )
    while queues:
        log = rnd.choice(sorted(queues))
        out.append(queues[log].pop(0))
        owner.append(log)
        if not queues[log]:
            del queues[log]
    return out, owner


# a non-nullable column's value when a test row does not name it
DEFAULTS = {
    T.StringType: "",
    T.LongType: 0,
    T.IntegerType: 0,
    T.DoubleType: 0.0,
    T.BooleanType: False,
}


def schema_rows(spec, values: list[dict]) -> list[tuple]:
    """Rows of the table's schema: the given columns, the rest null (or a default when not nullable)."""
    out = []
    for v in values:
        row = []
        for f in spec.struct.fields:
            if f.name in v:
                row.append(v[f.name])
            elif f.nullable:
                row.append(None)
            elif isinstance(f.dataType, T.TimestampType):
                row.append(dt.datetime(2025, 1, 1, tzinfo=dt.UTC))
            elif isinstance(f.dataType, T.ArrayType):
                row.append([])
            else:
                row.append(DEFAULTS[type(f.dataType)])
        out.append(tuple(row))
    return out


def append_rows(spark, spec, lake: str, values: list[dict]) -> None:
    """Append `values` (`schema_rows`) to `spec`'s Delta table under `lake`, one commit."""
    df = spark.createDataFrame(schema_rows(spec, values), spec.struct)
    df.write.format("delta").mode("append").partitionBy(*spec.partition_by).save(spec.path(lake))


def month_jobs(month: str, n: int, first: int = 0) -> list[dict]:
    """n rows of `month` with log ids MONTH-first .. MONTH-(first + n - 1)."""
    return [{"log_id": f"{month}-{i}", "job_month": month} for i in range(first, first + n)]
