"""iolake/per_key.py: an answer computed once per distinct key reaches every row of the key, nulls and NaNs included."""

import math

import pyspark.sql.functions as F
import pytest

from iolake.per_key import KEY_ID, in_pandas, join_answers

ROWS = [  # (row, k_text, k_long, k_double, old_answer): 13 rows, 8 distinct keys
    (1, "a", 1, 1.0, "x"),
    (2, "a", 1, 1.0, "x"),
    (3, "a", 1, 1.0, "x"),
    (4, "a", None, 1.0, "x"),
    (5, "a", None, 1.0, "x"),  # a null long
    (6, None, 2, None, "x"),
    (7, None, 2, None, "x"),  # a null text and a null double
    (8, "b", 2, float("nan"), "x"),
    (9, "b", 2, float("nan"), "x"),  # NaN: null after pandas
    (10, "b", 2**60 + 1, -0.0, "x"),  # beyond a float's 53 bits
    (11, "c", 3, 0.1 + 0.2, "x"),
    (12, "c", 3, 1e-310, "x"),
    (13, "c", 3, float("inf"), "x"),  # every bit
]
KEY = ["k_text", "k_long", "k_double"]
SCHEMA = "row long, k_text string, k_long long, k_double double, answer string"


def _expected(k_text, k_long, k_double) -> str:
    d = (
        "nan" if k_double is None or math.isnan(k_double) else k_double
    )  # pandas: null and NaN alike
    return f"{k_text}|{k_long}|{d}"


def _describe(batches):
    """The answer in pandas, as the advise stage's search is: a null long comes in as pd.NA, a null
    double as NaN."""
    import pandas as pd

    for b in batches:
        text = [
            f"{t}|{None if pd.isna(n) else int(n)}|{'nan' if pd.isna(d) else d}"
            for t, n, d in zip(b.k_text, b.k_long, b.k_double)
        ]
        yield pd.DataFrame({KEY_ID: b[KEY_ID], "answer": text})


def test_join_answers_in_pandas_reaches_every_row_through_nulls_and_nans(spark):
    from pyspark.sql import types as T

    rows = spark.createDataFrame(ROWS, SCHEMA)
    seen = []

    def answer(keys):
        seen.append(keys.count())
        return in_pandas(keys, _describe, T.StructType([T.StructField("answer", T.StringType())]))

    got = {r.row: r for r in join_answers(rows, KEY, answer).collect()}
    assert seen == [
        8
    ]  # one answer per distinct key (-0.0 and 0.0 alike, every NaN alike, nulls alike)
    assert sorted(got) == [r[0] for r in ROWS]  # no row lost, none doubled
    for row, k_text, k_long, k_double, _ in ROWS:
        r = got[row]
        assert (r.k_text, r.k_long) == (k_text, k_long)
        assert r.k_double == k_double or (math.isnan(r.k_double) and math.isnan(k_double))
        # the answer's column replaced the rows' own "answer"; 0.0 and -0.0 are one key
        assert r.answer == _expected(k_text, k_long, k_double).replace("-0.0", "0.0"), row


def test_in_pandas_hands_the_keys_back_exactly(spark):
    """What pandas alone would not: the NaN, the null double and the long beyond 2**53 come back as they went."""
    from pyspark.sql import types as T

    keys = spark.createDataFrame(ROWS, SCHEMA).select(*KEY).distinct()
    back = in_pandas(keys, _describe, T.StructType([T.StructField("answer", T.StringType())]))
    assert back.columns == [*KEY, "answer"]
    cond = [keys[c].eqNullSafe(back[c]) for c in KEY]
    assert (
        keys.join(back, cond, "left_anti").count() == 0
        and back.join(keys, cond, "left_anti").count() == 0
    )


def test_join_answers_names_what_is_missing(spark):
    rows = spark.createDataFrame([(1, "a")], "row long, k string")
    with pytest.raises(ValueError, match=r"key columns \['nope'\]"):
        join_answers(rows, ["k", "nope"], lambda keys: keys)
    with pytest.raises(ValueError, match=r"must return the key columns; it lacks \['k'\]"):
        join_answers(rows, ["k"], lambda keys: keys.select(F.lit(1).alias("answer")))
