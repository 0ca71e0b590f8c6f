"""A newer Darshan's extra counter evolves a bronze module table: old rows null, nothing lost.

Real logs go through `iolake ingest`; the newer module version is a decoded POSIX table of
another real log carrying one more counter column (the native decoder does not yet decode
module versions newer than it knows: it notes them and emits no records).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pytest
from pyspark.sql import types as T

from iolake.cli import sample_inputs
from iolake.config import load_config
from iolake.lake import SchemaConflict, ensure_table, merge_new_logs, read_table
from readers import (
    native_darshan as native,
)  # imports without the extension: `native._native` is None
from schemas import BRONZE
from tests.support.data import need

pytestmark = pytest.mark.slow  # shared corpus / built lakes: `make test` only, not `make check`

need(
    native._native is not None,
    "needs iolake_native, the native decoder's extension (pip install ./native)",
)

POSIX = BRONZE["posix"]
NEW = "POSIX_NEWER_COUNTER"  # what a future POSIX module version appends


def _log(name: str) -> str:
    return str(Path(sample_inputs()[0]) / name)


def _decoded_posix(spark, path: str, log_id: str, month: str = "2017-03"):
    """The log's POSIX rows as ingest stages them, plus the newer version's extra counter."""
    from jobs.ingest_tasks import with_ingest_columns

    t = with_ingest_columns("posix", native.decode_darshan(path)["posix"], log_id, month)
    extra = pa.compute.add(
        pa.compute.multiply(t.column("POSIX_OPENS"), 1000), t.column("POSIX_WRITES")
    )
    t = t.append_column(pa.field(NEW, pa.int64(), True), extra)
    return spark.createDataFrame(
        t.to_pandas(), T.StructType(POSIX.struct.fields + [T.StructField(NEW, T.LongType())])
    )


def test_new_counter_evolves_table(spark, tmp_path):
    from jobs.ingest import run as ingest

    lake = str(tmp_path / "lake")
    conf = load_config(
        "local", overrides={"lake": {"root": lake}, "gates": {"enabled": False}}
    )  # the gate runs below
    s1 = ingest(spark, conf, [_log("example.darshan")], echo=lambda *_: None)
    assert s1["status"].get("ok", 0) + s1["status"].get("partial", 0) == 1
    old = read_table(spark, POSIX, lake).localCheckpoint()  # pinned: the table changes below
    old_rows, old_ids = old.count(), {r.log_id for r in old.select("log_id").distinct().collect()}
    assert old_rows > 0 and NEW not in old.columns

    # a newer log: its decoded POSIX table carries one more counter; the gate accepts it
    newer = _decoded_posix(
        spark,
        _log("shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan"),
        "newer-log",
    )
    n_newer = newer.count()
    assert n_newer > 0
    from iolake import gates

    gates.validate(POSIX, newer)
    merge_new_logs(spark, POSIX, lake, newer)

    t = read_table(spark, POSIX, lake)
    assert t.columns == POSIX.columns + [NEW]  # appended, every old column kept in place
    assert dict(t.dtypes)[NEW] == "bigint"
    assert t.count() == old_rows + n_newer
    assert t.where(t.log_id.isin(old_ids) & t[NEW].isNotNull()).count() == 0  # old rows: null
    got = {(r.record_id, r.rank): r[NEW] for r in t.where(t.log_id == "newer-log").collect()}
    want = {(r.record_id, r.rank): r.POSIX_OPENS * 1000 + r.POSIX_WRITES for r in newer.collect()}
    assert got == want and all(v is not None for v in got.values())
    # every old counter survived unchanged
    before = old.select(*POSIX.columns).exceptAll(
        t.where(t.log_id.isin(old_ids)).select(*POSIX.columns)
    )
    assert before.count() == 0

    # the same log again: exactly once still holds on the evolved table
    merge_new_logs(spark, POSIX, lake, newer)
    assert read_table(spark, POSIX, lake).count() == old_rows + n_newer

    # an older-version log afterwards (no extra column) ingests as usual; its rows read null
    s2 = ingest(spark, conf, [_log("ior_hdf5_example.darshan")], echo=lambda *_: None)
    assert s2["new"] == 1
    t = read_table(spark, POSIX, lake)
    third = t.where(~t.log_id.isin([*old_ids, "newer-log"]))
    assert third.count() == s2["rows"].get("posix", 0) > 0
    assert third.where(third[NEW].isNotNull()).count() == 0

    # a type change of an existing column is refused, naming it; nothing is written
    rows_now = t.count()
    bad = newer.withColumn("log_id", newer.log_id.substr(1, 3)).withColumn(
        NEW, newer[NEW].cast("string")
    )
    with pytest.raises(SchemaConflict, match=rf"{NEW}: bigint -> string"):
        merge_new_logs(spark, POSIX, lake, bad)
    assert read_table(spark, POSIX, lake).count() == rows_now


def test_spec_that_gained_a_counter_evolves_the_table(spark, tmp_path):
    """schemas/darshan_counters.py gaining a counter: ensure_table appends it, nullable."""
    lake = str(tmp_path / "lake")
    rows = _decoded_posix(spark, _log("example.darshan"), "old-log").drop(NEW)
    merge_new_logs(spark, POSIX, lake, rows)
    grown = dataclasses.replace(
        POSIX,
        struct=T.StructType(
            POSIX.struct.fields + [T.StructField("POSIX_F_NEWER_TIME", T.DoubleType(), True)]
        ),
    )
    ensure_table(spark, grown, lake)
    t = read_table(spark, grown, lake)
    assert t.columns == grown.columns and t.count() == rows.count()
    assert t.where(t.POSIX_F_NEWER_TIME.isNotNull()).count() == 0
    changed = dataclasses.replace(
        POSIX,
        struct=T.StructType(
            [
                T.StructField(
                    f.name, T.StringType() if f.name == "POSIX_OPENS" else f.dataType, f.nullable
                )
                for f in POSIX.struct.fields
            ]
        ),
    )
    with pytest.raises(SchemaConflict, match="POSIX_OPENS: bigint -> string"):
        ensure_table(spark, changed, lake)
