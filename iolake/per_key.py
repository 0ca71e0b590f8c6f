"""Work that depends only on a few columns, done once per distinct value of them and joined back.

The advise stage's what-if search and the score stage's model calls read a file's model inputs
only (its I/O features and tier), and files repeat them: a lake holds far fewer distinct
feature groups than data files. `join_answers` runs the costly part on the distinct keys
and gives every row its key's answer, so the cost follows the keys, not the rows; `in_pandas`
runs such an answer in pandas on the executors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql import types as T

KEY_ID = "_key"  # a key as JSON text, while it goes through pandas (see in_pandas)


def join_answers(
    rows: DataFrame, key: Sequence[str], answer: Callable[[DataFrame], DataFrame]
) -> DataFrame:
    """`rows` with the columns `answer` computes, `answer` run once per distinct value of `key`.

    `answer(keys)` gets the distinct key rows and returns them, key columns as they were, with its
    answer columns: one row per key. Answer columns replace columns of `rows` of the same name,
    as `withColumn` would.

    The answers join back on the key columns with null-safe equality (several model inputs are
    null for some files; a plain `==` would drop those rows), broadcast: keys are few. A left join,
    so no row is lost if `answer` leaves a key out (its answer columns are null then)."""
    key = list(key)
    missing = [c for c in key if c not in rows.columns]
    if missing:
        raise ValueError(
            f"join_answers: key columns {missing} are not among the rows' columns {rows.columns}"
        )
    answers = answer(rows.select(*key).distinct())
    lost = [c for c in key if c not in answers.columns]
    if lost:
        raise ValueError(f"join_answers: the answer must return the key columns; it lacks {lost}")
    made = [c for c in answers.columns if c not in key]
    # the key columns under other names: the keys come from `rows`, and a self-join needs them apart
    alias = {c: f"{KEY_ID}_{i}" for i, c in enumerate(key)}
    back = _opaque(answers.select(*key, *made)).select(
        *[F.col(c).alias(a) for c, a in alias.items()], *made
    )
    kept = rows.select(*[c for c in rows.columns if c not in made])
    joined = kept.join(
        F.broadcast(back), [kept[c].eqNullSafe(back[a]) for c, a in alias.items()], "left"
    )
    return joined.select(*[kept[c] for c in kept.columns], *[back[c] for c in made])


def _opaque(df: DataFrame) -> DataFrame:
    """`df` as it is, through a Python step the optimizer cannot see through (Arrow in, the same
    Arrow out: exact, and cheap for a few thousand keys). Spark's constraint propagation keeps,
    for every key column renamed above an expression over all of them (the model call's
    `udf(struct(15 columns))`), that expression both ways: 2**15 copies, and planning the join takes
    seconds (with the key's JSON text beside it, it does not end); renamed above this step, the
    key columns are new to the optimizer and carry nothing."""
    return df.mapInArrow(_same, df.schema)


def _same(batches):
    yield from batches


def in_pandas(
    keys: DataFrame, run: Callable[[Iterator], Iterator], schema: T.StructType
) -> DataFrame:
    """An answer for `join_answers` computed in pandas: `run` gets batches (pandas frames) of the
    key rows with `KEY_ID` and yields `KEY_ID` and the columns of `schema` for each.

    The key columns come back from `KEY_ID`, the key as JSON text, which reads back exactly
    (nulls, NaN, 64-bit longs, every double's bits; tests/iolake/test_per_key.py): pandas would not
    hand them back as they came (a null long comes in as pd.NA, a NaN goes out null)."""
    key = keys.columns
    out = keys.withColumn(KEY_ID, F.to_json(F.struct(*key))).mapInPandas(
        run, T.StructType([T.StructField(KEY_ID, T.StringType()), *schema.fields])
    )
    parsed = F.from_json(KEY_ID, T.StructType([keys.schema[c] for c in key]))
    return out.select(parsed.alias(KEY_ID), *schema.fieldNames()).select(
        *[F.col(f"{KEY_ID}.{c}").alias(c) for c in key], *schema.fieldNames()
    )
