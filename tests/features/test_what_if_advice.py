"""`features.advice.what_if_advice`: files of a job given the same change make one row, shown by
the file moving the most bytes; among files moving as many (a file-per-process job), the same
file whatever order the rows arrive in (a cluster's partitions arrive in any order)."""

from features.advice import WHAT_IF_SCHEMA, what_if_advice

ANSWER = dict(
    current="tier pfs",
    advised="tier bb",
    change="tier bb",
    now=100.0,
    best=300.0,
    speedup=3.0,
    evidence=["tier bb alone: 3.0x"],
    message="Move {file} to the burst buffer",
    is_advice=True,
    alone={"tier": 3.0},
)


def _row(record_id: int, nbytes: int) -> dict:
    return dict(
        log_id="L",
        job_month="2026-01",
        record_id=record_id,
        file_name=f"/scratch/f{record_id}",
        bytes=nbytes,
        **ANSWER,
    )


def _advice(spark, rows: list[dict]) -> dict:
    df = spark.createDataFrame(
        [tuple(r[f.name] for f in WHAT_IF_SCHEMA.fields) for r in rows], WHAT_IF_SCHEMA
    ).repartition(1)
    (out,) = what_if_advice(df, "iolake-bandwidth", "1").collect()
    return out.asDict()


def test_equal_bytes_pick_the_same_file_in_any_row_order(spark):
    rows = [_row(rid, 1 << 28) for rid in (7, 3, 9, 5)] + [_row(1, 1 << 20)]
    picks = {_advice(spark, order)["item"] for order in (rows, rows[::-1], rows[2:] + rows[:2])}
    assert picks == {"9"}  # the highest record id of the files moving the most bytes


def test_the_file_moving_the_most_bytes_is_shown_with_the_others_counted(spark):
    out = _advice(spark, [_row(9, 1 << 20), _row(2, 1 << 28), _row(4, 1 << 10)])
    assert out["item"] == "2" and out["file_name"] == "/scratch/f2"
    assert out["message"].endswith("/scratch/f2 and 2 more file(s) with the same setting")
