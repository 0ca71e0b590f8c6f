"""The table-spec type every `schemas/<table>.py` module builds, and the one Spark -> Arrow type map.

A `TableSpec` is the single place a table's shape lives: its Spark `StructType` (used to create
the Delta table, to read it and to build test frames), its Arrow schema (used by decoders and
`mapInArrow`), its merge keys, partition column, Delta properties and its expectations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import types as T

# Columns the ingest stage adds to every bronze row; decoders never produce them.
LOG_ID = T.StructField("log_id", T.StringType(), nullable=False)
JOB_MONTH = T.StructField("job_month", T.StringType(), nullable=False)
INGEST_COLUMNS = ("log_id", "job_month")

# Where a model's rows come from (`models/provenance.py`), on every table a registered model writes:
# the alias it was loaded by, its training run's source, and whether that is this lake's own jobs.
TRAINING_ORIGINS = ("lake", "benchmark", "shipped_benchmark", "unknown")
PROVENANCE = (
    T.StructField("model_alias", T.StringType(), True),
    T.StructField("trained_on", T.StringType(), True),
    T.StructField("training_origin", T.StringType(), True),
)

DEFAULT_PROPERTIES = {
    "delta.appendOnly": "false",
    "delta.autoOptimize.optimizeWrite": "true",
}
STATS_COLUMNS = "delta.dataSkippingStatsColumns"


def key_statistics(*columns: str) -> dict:
    """DEFAULT_PROPERTIES with Delta's per-file statistics kept for `columns` only (a wide table's
    keys). Without it Delta keeps min, max and null counts of the first 32 columns: for a counter
    table, counters that no read skips files by, which every snapshot open (Spark's and delta-rs')
    parses again for every file of the table (docs/decisions/0049)."""
    return {**DEFAULT_PROPERTIES, STATS_COLUMNS: ",".join(columns)}


@dataclass(frozen=True)
class Expectation:
    """One data-quality rule, named like Great Expectations' expectation classes."""

    kind: str  # e.g. "not_null", "unique", "in_set", "between", "compound_unique"
    column: str | tuple[str, ...]
    args: dict = field(default_factory=dict)


@dataclass(frozen=True)
class TableSpec:
    name: str
    layer: str  # bronze | silver | gold
    struct: T.StructType
    keys: tuple[str, ...]  # a row's identity; MERGE de-duplicates on these
    partition_by: tuple[str, ...] = ("job_month",)
    properties: dict = field(default_factory=lambda: dict(DEFAULT_PROPERTIES))
    expectations: tuple[Expectation, ...] = ()
    doc: str = ""
    # a function (spec) -> extra expectations, for generated tables
    extra: Callable | None = None
    # what an insert-only commit matches existing rows on (`iolake.lake.writer`): by default a
    # log's rows land once per table, keyed (job_month, log_id); predictions name the model version
    merge_on: tuple[str, ...] = ("job_month", "log_id")
    # columns `iolake maintain` Z-orders by (what analysts filter on); None: the key columns
    # that are not partition columns, at most two; () : compaction only
    zorder_by: tuple[str, ...] | None = None
    # one column a table is looked up by: `iolake maintain` rewrites it sorted by that column in
    # small row groups (iolake/lake/layout.py) instead of Spark's OPTIMIZE; () : OPTIMIZE
    sorted_by: tuple[str, ...] = ()

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.struct.fields]

    @property
    def arrow_schema(self) -> pa.Schema:
        return arrow_schema(self.struct)

    @property
    def decoded_arrow_schema(self) -> pa.Schema:
        """The schema a decoder emits for one log: the table minus the ingest-added columns."""
        return arrow_schema(
            T.StructType([f for f in self.struct.fields if f.name not in INGEST_COLUMNS])
        )

    @property
    def zorder_columns(self) -> tuple[str, ...]:
        """Z-order columns for OPTIMIZE: never a partition column (Delta refuses those)."""
        if self.zorder_by is not None:
            cols = tuple(self.zorder_by)
        else:
            cols = tuple(k for k in self.keys if k not in self.partition_by)[:2]
        bad = [c for c in cols if c in self.partition_by or c not in self.columns]
        if bad:
            raise ValueError(
                f"{self.layer}/{self.name}: cannot Z-order by {bad} (partition column or no such column)"
            )
        return cols

    def path(self, lake: str) -> str:
        return f"{lake.rstrip('/')}/{self.layer}/{self.name}"


def arrow_type(dt: T.DataType) -> pa.DataType:
    if isinstance(dt, T.LongType):
        return pa.int64()
    if isinstance(dt, T.IntegerType):
        return pa.int32()
    if isinstance(dt, T.DoubleType):
        return pa.float64()
    if isinstance(dt, T.StringType):
        return pa.string()
    if isinstance(dt, T.BooleanType):
        return pa.bool_()
    if isinstance(dt, T.TimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(dt, T.DateType):
        return pa.date32()
    if isinstance(dt, T.BinaryType):
        return pa.binary()
    if isinstance(dt, T.ArrayType):
        return pa.list_(arrow_type(dt.elementType))
    if isinstance(dt, T.MapType):
        return pa.map_(arrow_type(dt.keyType), arrow_type(dt.valueType))
    if isinstance(dt, T.StructType):
        return pa.struct([pa.field(f.name, arrow_type(f.dataType), f.nullable) for f in dt.fields])
    raise TypeError(f"no Arrow mapping for Spark type {dt!r}")


def arrow_schema(struct: T.StructType) -> pa.Schema:
    return pa.schema([pa.field(f.name, arrow_type(f.dataType), f.nullable) for f in struct.fields])
