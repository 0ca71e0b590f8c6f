"""Test frames built from the declared schemas (STYLE: one place per fact)."""

from __future__ import annotations

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
