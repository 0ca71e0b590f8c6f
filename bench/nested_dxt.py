"""Nested vs flat storage of DXT segments (bronze/io_ops): write cost, size on disk, reader cost.

    .venv/bin/python bench/nested_dxt.py [--replicas K] [--inputs PATH ...] [--rounds 2]
                                         [--driver-memory 4g] [--keep]

Flat is today's `bronze/io_ops` (`schemas/io_ops.py`): one row per traced operation. Nested is the
proposed alternative: one row per (log_id, job_month, source, record_id, rank) with `hostname` as
a scalar and the per-operation columns as arrays in one order (`NESTED_COLUMNS`):
seq, op, func, offset, length, start_s, end_s, thread.

Array order within a row: DXT segments as Darshan stores them, writes then reads, each in `seq`
order (the decoder numbers writes and reads separately, so `seq` alone is not unique within a
(record, rank): (op, seq) is); Recorder calls in `seq` (trace) order.

Steps, in one run (every ratio is against the flat baseline measured in the same run):
1. corpus: the logs of ../shared/data/darshan/MANIFEST.csv (or `--inputs`: logs, folders, Recorder
   traces) decoded with the project's own decoders; those with io_ops rows are kept. `--replicas
   K` adds K copies of each DXT-bearing Darshan log with distinct jobids (bench/make_corpus.py's
   `Template.with_jobid`), decoded from memory: nothing is copied into the repo. Each log's rows
   get log_id (sha256 of the content) and job_month as ingest adds them (`with_ingest_columns`).
2. each log's flat Arrow table is converted to nested (sort, list arrays from run boundaries)
   and back, and the round trip must give the same multiset of rows; both are staged as Parquet.
3. Spark (local[2], the `local` config's properties) writes each staged set into its own Delta
   table (partitioned by job_month, the io_ops table properties), `--rounds` times alternating
   flat/nested, each round into fresh folders: best write seconds, rows, Parquet files, bytes.
4. readers, flat vs nested, best of `--rounds` alternating, each asserted to give the same result
   on both (count + an order-free hash sum of all rows; small results also compared row by row):
     a  the analysts' flat view (nested exploded with inline(arrays_zip(...))): count, a
        per-(log, record) count/sum(length) GROUP BY, and a full scan of all columns; plus the
        same count and GROUP BY computed on the arrays without exploding;
     b  file features' access pattern (`features.file_features.ops_pattern_stats`: join, length
        filter, window over (log, record, rank, op) by start_s, seq and consecutive/sequential/
        random sums): flat, nested exploded through the same function, and nested
        without exploding (per direction `filter` + `sort_array`, then one `aggregate` pass that
        carries the previous op, as the window's lag). `want` stands in for the file features'
        frame: per (log, record) the data layer's DXT source (MPI-IO when it has DXT_MPIIO
        segments) and its transfer size (the most frequent read/write length);
     c  covering sets' interval source (`features.covering_sets.intervals` with empty counter
        tables): flat, nested exploded through the same function, and nested with the read/write
        intervals filtered on the arrays before exploding;
     d  a per-record aggregate (ops, first start, last end, bytes read/written) by groupBy on flat
        (and on nested exploded) vs array_min/array_max/aggregate per nested row.
   Higher-order functions (filter, transform, zip_with, aggregate) are evaluated by Spark's
   interpreter (no code generation), and a result used several times in one projection, or in a
   `where` pushed below it, may be evaluated again: the array variants compute each array once.
   A timed run writes the result to Spark's `noop` sink (counts use `.count()`).

Prints the corpus (logs, segments, flat rows, nested rows, segments per nested row, hostname
check), then one table: metric, flat, nested, nested/flat. Temporary data lives under a
`tempfile.mkdtemp(prefix="iolake-nested-")` folder, deleted at the end unless `--keep`.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.make_corpus import SHARED, load_templates  # noqa: E402
from jobs.ingest_tasks import job_month, with_ingest_columns  # noqa: E402
from schemas import BRONZE, arrow_schema  # noqa: E402

FLAT = BRONZE["io_ops"]
GROUP_KEY = ["log_id", "job_month", "source", "record_id", "rank"]
NESTED_COLUMNS = ["seq", "op", "func", "offset", "length", "start_s", "end_s", "thread"]
FLAT_ARROW = arrow_schema(FLAT.struct)
FLUSH_ROWS = 1 << 20  # flat rows per staged Parquet file
SMALL = 200_000  # results up to this many rows are also compared row by row
FIRST_JOBID = 8_100_000_000
WANT_SCHEMA = pa.schema([("log_id", pa.string()), ("record_id", pa.int64()), ("source", pa.string()),
                         ("transfer_size", pa.int64())])


# -- schemas ---------------------------------------------------------------------------------------


def nested_struct():
    """The nested table's Spark schema: the group key and hostname as in io_ops, then one array
    per operation column (elements nullable as the flat columns are)."""
    from pyspark.sql import types as T

    by_name = {f.name: f for f in FLAT.struct.fields}
    fields = [by_name[c] for c in GROUP_KEY + ["hostname"]]
    fields += [T.StructField(c, T.ArrayType(by_name[c].dataType, True), False) for c in NESTED_COLUMNS]
    return T.StructType(fields)


def nested_arrow() -> pa.Schema:
    return arrow_schema(nested_struct())


# -- corpus: decode, add the ingest columns ----------------------------------------------------------


@dataclass
class Corpus:
    logs: int = 0
    recorder_logs: int = 0
    replicas: int = 0
    flat_rows: int = 0
    nested_rows: int = 0
    max_per_row: int = 0  # segments in the largest nested row
    decode_s: float = 0.0
    nest_s: float = 0.0
    hostname_varies: int = 0  # nested rows whose group had more than one hostname
    reordered: int = 0  # nested rows whose array order is not the decoder's row order
    flat_files: list[str] = field(default_factory=list)
    nested_files: list[str] = field(default_factory=list)
    want: list[pa.Table] = field(default_factory=list)


def manifest_logs(manifest: Path) -> list[Path]:
    with manifest.open() as f:
        return [manifest.parent / row["path"] for row in csv.DictReader(f)]


def decode_trace(source, kind: str = "darshan"):
    """(io_ops table or None, start_time_sec) of one trace: a Darshan path or bytes, or a Recorder
    folder; (None, None) when it does not decode (ingest would quarantine it)."""
    try:
        if kind == "recorder":
            from readers.recorder import decode_recorder

            d = decode_recorder(str(source))
        else:
            from readers.native_darshan import decode

            d = decode(source)
        io = d.all_tables().get("io_ops")
    except Exception:  # noqa: BLE001 - as ingest, any failure quarantines the trace
        return None, None
    start = d.tables["jobs"].column("start_time_sec")[0].as_py() if d.tables["jobs"].num_rows else None
    return (io if io is not None and io.num_rows else None), start


def traces(args) -> list[tuple[str, str]]:
    """(uri, kind) of every input trace: `--inputs` when given, else the manifest's logs."""
    if args.inputs:
        from iolake.config import load_config
        from readers.fsio import list_traces

        return [(t.uri, t.kind) for t in list_traces(args.inputs, load_config("local").ingest.suffixes)]
    return [(str(p), "darshan") for p in manifest_logs(args.manifest)]


# -- flat -> nested in Arrow ------------------------------------------------------------------------------


def _changed(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Bool of length n-1: row i+1 differs from row i (null-aware: null == null)."""
    a, b = col[1:], col[:-1]
    ne = pc.fill_null(pc.not_equal(a, b), False)
    nulls = pc.not_equal(pc.is_null(a), pc.is_null(b))
    return np.asarray(pc.or_(ne, nulls))


def nested_order(flat: pa.Table) -> pa.Array:
    """Row indices in nested order: group key, then DXT writes before reads, then seq."""
    dxt_read = pc.and_(pc.not_equal(flat["source"], "RECORDER"), pc.equal(flat["op"], "read"))
    keyed = flat.select(GROUP_KEY + ["seq"]).append_column("_phase", pc.cast(dxt_read, pa.int8()))
    keys = [(c, "ascending") for c in GROUP_KEY + ["_phase", "seq"]]
    return pc.sort_indices(keyed, sort_keys=keys)


def to_nested(flat: pa.Table) -> tuple[pa.Table, int, int]:
    """(the nested table, its groups whose hostname is not constant, its groups whose arrays are not
    in the decoder's row order)."""
    order = nested_order(flat)
    t = flat.take(order)
    n = t.num_rows
    new_group = np.zeros(max(n - 1, 0), dtype=bool)
    for c in GROUP_KEY:
        new_group |= _changed(t[c])
    starts = np.flatnonzero(np.concatenate([[True], new_group])) if n else np.zeros(0, np.int64)
    host_varies = int(np.count_nonzero(_changed(t["hostname"]) & ~new_group)) if n else 0
    offsets = pa.array(np.append(starts, n), pa.int32())
    schema = nested_arrow()
    cols = {c: t[c].take(pa.array(starts)) for c in GROUP_KEY + ["hostname"]}
    for c in NESTED_COLUMNS:
        cols[c] = pa.ListArray.from_arrays(offsets, t[c].combine_chunks(), type=schema.field(c).type)
    nested = pa.Table.from_arrays([cols[f.name] for f in schema], schema=schema)
    back = np.flatnonzero((np.diff(order.to_numpy()) < 0) & ~new_group)  # row i+1 came before row i
    reordered = len(np.unique(np.searchsorted(starts, back, side="right")))
    return nested, host_varies, reordered


def to_flat(nested: pa.Table) -> pa.Table:
    """The nested table's rows back in the flat schema."""
    parent = pc.list_parent_indices(nested["seq"])
    cols = {c: nested[c].take(parent) for c in GROUP_KEY + ["hostname"]}
    cols.update({c: pc.list_flatten(nested[c]) for c in NESTED_COLUMNS})
    return pa.Table.from_arrays([cols[f.name] for f in FLAT_ARROW], schema=FLAT_ARROW)


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    """Same multiset of rows: both sorted on every column, then compared."""
    keys = [(c, "ascending") for c in a.column_names]
    return a.num_rows == b.num_rows and a.sort_by(keys).equals(b.sort_by(keys))


def want_rows(flat: pa.Table) -> pa.Table:
    """Stand-in for file_features' frame: per (log, record) with DXT reads/writes, the data layer's
    source (DXT_MPIIO when the record has MPI-IO segments) and its most frequent length."""
    rw = flat.filter(pc.and_(pc.is_in(flat["op"], pa.array(["read", "write"])),
                             pc.is_in(flat["source"], pa.array(["DXT_POSIX", "DXT_MPIIO"]))))
    g = rw.group_by(["log_id", "record_id", "source", "length"]).aggregate([("seq", "count")]).to_pandas()
    mpiio = g.assign(mp=g["source"] == "DXT_MPIIO").groupby(["log_id", "record_id"])["mp"].transform("any")
    g = g[g["source"] == np.where(mpiio, "DXT_MPIIO", "DXT_POSIX")]
    g = g.sort_values(["log_id", "record_id", "seq_count", "length"], ascending=[True, True, False, True])
    g = g.drop_duplicates(["log_id", "record_id"]).rename(columns={"length": "transfer_size"})
    return pa.Table.from_pandas(g[WANT_SCHEMA.names], schema=WANT_SCHEMA, preserve_index=False)


# -- staging ----------------------------------------------------------------------------------------------


class Stager:
    """Buffers per-log flat and nested tables; writes one Parquet file of each per `FLUSH_ROWS` flat rows."""

    def __init__(self, root: Path, corpus: Corpus):
        self.root, self.corpus = root, corpus
        self.flat: list[pa.Table] = []
        self.nested: list[pa.Table] = []
        self.rows = 0
        for sub in ("flat", "nested"):
            (root / sub).mkdir(parents=True, exist_ok=True)

    def add(self, flat: pa.Table, nested: pa.Table) -> None:
        self.flat.append(flat)
        self.nested.append(nested)
        self.rows += flat.num_rows
        if self.rows >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.flat:
            return
        k = len(self.corpus.flat_files)
        for sub, parts, out in (("flat", self.flat, self.corpus.flat_files),
                                ("nested", self.nested, self.corpus.nested_files)):
            path = str(self.root / sub / f"part-{k:04d}.parquet")
            pq.write_table(pa.concat_tables(parts), path)
            out.append(path)
            parts.clear()
        self.rows = 0


def add_log(stager: Stager, corpus: Corpus, io: pa.Table, log_id: str, start) -> None:
    """One decoded log: ingest columns, nest, check the round trip, stage."""
    flat = with_ingest_columns("io_ops", io, log_id, job_month(start))
    t0 = time.perf_counter()
    nested, host_varies, reordered = to_nested(flat)
    corpus.nest_s += time.perf_counter() - t0
    if not same_rows(flat, to_flat(nested)):
        raise AssertionError(f"log {log_id}: nested -> flat does not give the same rows"
                             f" ({host_varies} groups with more than one hostname)")
    corpus.logs += 1
    corpus.recorder_logs += int(pc.any(pc.equal(flat["source"], "RECORDER")).as_py() or False)
    corpus.flat_rows += flat.num_rows
    corpus.nested_rows += nested.num_rows
    corpus.max_per_row = max(corpus.max_per_row, pc.max(pc.list_value_length(nested["seq"])).as_py() or 0)
    corpus.hostname_varies += host_varies
    corpus.reordered += reordered
    corpus.want.append(want_rows(flat))
    stager.add(flat, nested)


def build_corpus(args, work: Path) -> Corpus:
    corpus = Corpus()
    stager = Stager(work / "staged", corpus)
    templates: list[Path] = []
    for uri, kind in traces(args):
        t0 = time.perf_counter()
        src = uri if kind == "recorder" else Path(uri).read_bytes()
        io, start = decode_trace(src, kind)
        corpus.decode_s += time.perf_counter() - t0
        if io is None:
            continue
        log_id = hashlib.sha256(src).hexdigest() if kind == "darshan" else _recorder_id(uri)
        add_log(stager, corpus, io, log_id, start)
        if kind == "darshan" and pc.any(pc.not_equal(io["source"], "RECORDER")).as_py():
            templates.append(Path(uri))
    if args.replicas:
        add_replicas(stager, corpus, templates, args.replicas)
    stager.flush()
    return corpus


def _recorder_id(uri: str) -> str:
    from readers.fsio import content_hash

    return content_hash(uri, "recorder")


def add_replicas(stager: Stager, corpus: Corpus, paths: list[Path], k: int) -> None:
    """`k` copies of each DXT-bearing Darshan log with distinct jobids, decoded from memory."""
    good, bad = load_templates(paths)
    if bad:
        print(f"  {bad} DXT logs not usable as replica templates (make_corpus.load_templates)")
    jobid = FIRST_JOBID
    for _ in range(k):
        for t in good:
            data = t.with_jobid(jobid)
            jobid += 1
            t0 = time.perf_counter()
            io, start = decode_trace(data)
            corpus.decode_s += time.perf_counter() - t0
            if io is not None:
                add_log(stager, corpus, io, hashlib.sha256(data).hexdigest(), start)
                corpus.replicas += 1


# -- Spark: session, Delta writes ---------------------------------------------------------------------


def spark_session(work: Path, driver_memory: str):
    from iolake.config import load_config
    from iolake.spark import build_session

    return build_session(
        app_name="iolake-nested-dxt",
        master="local[2]",
        extra={
            **load_config("local").spark.properties,
            "spark.ui.enabled": "false",
            "spark.sql.warehouse.dir": str(work / "warehouse"),
            "spark.driver.memory": driver_memory,
        },
    )


def table_properties(nested: bool) -> dict:
    props = dict(FLAT.properties)
    if nested:  # no min/max statistics on array columns: start_s cannot be a stats column
        props["delta.dataSkippingStatsColumns"] = "log_id,record_id,rank"
    return props


def create_table(spark, path: str, struct, nested: bool) -> None:
    from delta.tables import DeltaTable

    b = DeltaTable.create(spark).location(path).addColumns(struct).partitionedBy(*FLAT.partition_by)
    for k, v in table_properties(nested).items():
        b = b.property(k, v)
    b.execute()


def write_delta(spark, staged: list[str], path: str, struct, nested: bool) -> float:
    """Seconds to append the staged Parquet files to a new Delta table at `path`."""
    create_table(spark, path, struct, nested)
    t0 = time.perf_counter()
    spark.read.parquet(*staged).select(*struct.names).write.format("delta").mode("append").save(path)
    return time.perf_counter() - t0


def disk_usage(path: Path) -> dict:
    data = [p for p in path.rglob("*.parquet") if "_delta_log" not in p.parts]
    log = [p for p in (path / "_delta_log").rglob("*") if p.is_file()]
    return {"files": len(data), "bytes": sum(p.stat().st_size for p in data),
            "log_bytes": sum(p.stat().st_size for p in log)}


def write_both(spark, corpus: Corpus, work: Path, rounds: int) -> tuple[dict, dict]:
    """Best write seconds and the last round's table paths and disk usage, per layout."""
    from pyspark.sql import types as T

    structs = {"flat": T.StructType(FLAT.struct.fields), "nested": nested_struct()}
    staged = {"flat": corpus.flat_files, "nested": corpus.nested_files}
    best = {"flat": float("inf"), "nested": float("inf")}
    paths: dict[str, Path] = {}
    for r in range(rounds):
        for name in ("flat", "nested"):
            path = work / "tables" / f"{name}-{r}"
            secs = write_delta(spark, staged[name], str(path), structs[name], name == "nested")
            print(f"  write {name} round {r + 1}: {secs:.1f} s", flush=True)
            best[name] = min(best[name], secs)
            if name in paths:
                shutil.rmtree(paths[name])
            paths[name] = path
    return best, paths


# -- readers --------------------------------------------------------------------------------------------


def flat_view(nested):
    """The nested table as flat io_ops rows (inline of the zipped arrays), in io_ops column order."""
    import pyspark.sql.functions as F

    rows = nested.select(*GROUP_KEY, "hostname", F.inline(F.arrays_zip(*[F.col(c) for c in NESTED_COLUMNS])))
    return rows.select(*FLAT.columns)


def by_record_flat(df):
    import pyspark.sql.functions as F

    return df.groupBy("log_id", "record_id").agg(F.count(F.lit(1)).alias("n"), F.sum("length").alias("bytes"))


def by_record_arrays(nested):
    """a2 without exploding: segments and bytes per nested row, summed per (log, record)."""
    import pyspark.sql.functions as F

    per_row = nested.select(
        "log_id", "record_id", F.size("seq").alias("n"),
        F.aggregate("length", F.lit(None).cast("long"),
                    lambda acc, x: F.when(x.isNull(), acc).otherwise(F.coalesce(acc, F.lit(0).cast("long")) + x))
        .alias("bytes"))
    return per_row.groupBy("log_id", "record_id").agg(F.sum("n").alias("n"), F.sum("bytes").alias("bytes"))


def count_arrays(nested) -> int:
    import pyspark.sql.functions as F

    return nested.agg(F.sum(F.size("seq"))).first()[0] or 0


PATTERN_COLS = ["log_id", "record_id", "op_n", "op_consec", "op_seq", "op_random", "op_first_read", "op_first_write"]


def _pattern_out(df):
    import pyspark.sql.functions as F

    casts = {"op_first_read": "double", "op_first_write": "double"}
    return df.select(*[F.col(c).cast(casts.get(c, "long")).alias(c) if c.startswith("op_") else F.col(c)
                       for c in PATTERN_COLS])


def pattern_flat(io_ops, want):
    """file features' access-pattern statistics (`file_features.ops_pattern_stats`) on flat rows."""
    from features.file_features import ops_pattern_stats

    return _pattern_out(ops_pattern_stats(io_ops, want))


def _data_ops(op: str):
    """One direction's data ops of a nested row (length = transfer size), sorted by (start_s, seq):
    the window's order, as struct order (nulls first, as ORDER BY ... ASC)."""
    import pyspark.sql.functions as F

    ops = F.arrays_zip("start_s", "seq", "offset", "length", "op")
    return F.sort_array(F.filter(ops, lambda x: (x["op"] == op) & (x["length"] == F.col("transfer_size"))))


def _pattern_counts(data):
    """One pass over sorted ops (`aggregate`) carrying the previous op's offset and end, as the
    window's lag does: struct(h: has a previous op, c: consecutive, s: sequential, r: random)."""
    import pyspark.sql.functions as F

    def one(cond):
        return F.when(cond, F.lit(1)).otherwise(F.lit(0)).cast("long")

    def step(acc, x):
        has_prev = acc["prev_off"].isNotNull()
        consec = has_prev & (x["offset"] == acc["prev_end"])
        seq = has_prev & ~consec & (x["offset"] > acc["prev_off"])
        rand = has_prev & ~consec & ~seq
        return F.struct(x["offset"].alias("prev_off"), (x["offset"] + x["length"]).alias("prev_end"),
                        *[(acc[k] + one(v)).alias(k) for k, v in zip("hcsr", (has_prev, consec, seq, rand))])

    zero = F.struct(F.lit(None).cast("long").alias("prev_off"), F.lit(None).cast("long").alias("prev_end"),
                    *[F.lit(0).cast("long").alias(k) for k in "hcsr"])
    return F.aggregate(data, zero, step)


def pattern_nested(nested, want):
    """The same statistics on nested rows, no explode: filter + sort_array per direction, then one
    `aggregate` pass each; separate selects so each sorted array is computed once."""
    import pyspark.sql.functions as F

    rows = nested.join(want, ["log_id", "record_id", "source"], "inner").select(
        "log_id", "record_id", _data_ops("read").alias("r"), _data_ops("write").alias("w"))
    cols = []
    for d in "rw":
        cols += [F.size(d).alias(f"{d}_rows"), F.array_min(F.transform(d, lambda x: x["start_s"])).alias(f"{d}_first"),
                 _pattern_counts(F.col(d)).alias(f"{d}_n")]
    per_row = rows.select("log_id", "record_id", *cols)

    def both(k):
        return F.sum(F.col(f"r_n.{k}") + F.col(f"w_n.{k}"))

    stats = per_row.groupBy("log_id", "record_id").agg(
        both("h").alias("op_n"), both("c").alias("op_consec"), both("s").alias("op_seq"),
        both("r").alias("op_random"), F.min("r_first").alias("op_first_read"),
        F.min("w_first").alias("op_first_write"), F.sum(F.col("r_rows") + F.col("w_rows")).alias("_rows"))
    return _pattern_out(stats.where(F.col("_rows") > 0))  # flat has a group only where data rows exist


def empty_counters(spark):
    return [spark.createDataFrame([], BRONZE[t].struct) for t in ("posix", "mpiio", "stdio")]


def intervals_project(spark, io_ops):
    """covering_sets.intervals on these io_ops (no counter rows: every interval is an op's)."""
    from features.covering_sets import intervals

    return intervals(io_ops, *empty_counters(spark))


def intervals_arrays(nested):
    """The same rows from nested: read/write ops with valid times filtered on the arrays, then exploded."""
    import pyspark.sql.functions as F
    from features.covering_sets import ITEM_KEY

    def valid(x):
        start, end = x["start_s"], x["end_s"]
        return (x["op"].isin("read", "write") & start.isNotNull() & end.isNotNull() & (start >= 0)
                & (end >= start) & ~F.isnan(start) & ~F.isnan(end))

    # one filter per row, exploded at once: a `where` on the filtered array would be pushed below
    # the projection and evaluate the filter twice
    iv = F.filter(F.arrays_zip("op", "start_s", "end_s"), valid)
    ops = nested.where(F.col("record_id").isNotNull()).select(*ITEM_KEY, "source", F.inline(iv))
    traced = ops.groupBy("log_id").agg(
        F.when(F.max((F.col("source") == "RECORDER").cast("int")) == 1, F.lit("recorder"))
        .otherwise(F.lit("dxt")).alias("interval_source"))
    return ops.join(traced, ["log_id"], "inner").select(*ITEM_KEY, "start_s", "end_s", "interval_source")


PER_RECORD = ["log_id", "source", "record_id", "n_ops", "first_start", "last_end", "bytes_read", "bytes_written"]


def per_record_flat(io_ops):
    import pyspark.sql.functions as F

    def nbytes(op):
        return F.sum(F.when(F.col("op") == op, F.coalesce("length", F.lit(0))).otherwise(0)).cast("long")

    return io_ops.groupBy("log_id", "source", "record_id").agg(
        F.count(F.lit(1)).cast("long").alias("n_ops"), F.min("start_s").alias("first_start"),
        F.max("end_s").alias("last_end"), nbytes("read").alias("bytes_read"),
        nbytes("write").alias("bytes_written")).select(*PER_RECORD)


def per_record_nested(nested):
    """Per nested row: array_min/array_max, and bytes read and written in one `aggregate` pass."""
    import pyspark.sql.functions as F

    def nbytes(x, op):
        return F.when(x["op"] == op, F.coalesce(x["length"], F.lit(0).cast("long"))).otherwise(F.lit(0).cast("long"))

    zero = F.struct(F.lit(0).cast("long").alias("r"), F.lit(0).cast("long").alias("w"))
    moved = F.aggregate(F.arrays_zip("op", "length"), zero, lambda acc, x: F.struct(
        (acc["r"] + nbytes(x, "read")).alias("r"), (acc["w"] + nbytes(x, "write")).alias("w")))
    per_row = nested.select(
        "log_id", "source", "record_id", F.size("seq").alias("n"), F.array_min("start_s").alias("lo"),
        F.array_max("end_s").alias("hi"), moved.alias("b"))
    return per_row.groupBy("log_id", "source", "record_id").agg(
        F.sum("n").cast("long").alias("n_ops"), F.min("lo").alias("first_start"), F.max("hi").alias("last_end"),
        F.sum("b.r").cast("long").alias("bytes_read"), F.sum("b.w").cast("long").alias("bytes_written")
    ).select(*PER_RECORD)


# -- timing and equality -------------------------------------------------------------------------------


def run_noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def best_of(rounds: int, flat_fn, nested_fn) -> tuple[float, float]:
    """Best seconds of each, alternating flat and nested."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for i, fn in enumerate((flat_fn, nested_fn)):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best[0], best[1]


def digest(df) -> tuple[int, int]:
    """(rows, sum of xxhash64 over every column): equal for equal multisets of rows."""
    import pyspark.sql.functions as F

    h = F.xxhash64(*[F.col(c) for c in sorted(df.columns)]).cast("decimal(38,0)")
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(h).alias("h")).first()
    return int(row["n"]), int(row["h"] or 0)


def assert_same(name: str, a, b) -> str:
    """Asserts both frames hold the same rows (digest; row by row when small); a note for the report."""
    da, db = digest(a.select(*sorted(a.columns))), digest(b.select(*sorted(a.columns)))
    if da != db:
        raise AssertionError(f"{name}: flat and nested differ: rows/hash {da} vs {db}")
    how = "rows + hash"
    if da[0] <= SMALL:
        ra = Counter(tuple(r) for r in a.select(*sorted(a.columns)).collect())
        rb = Counter(tuple(r) for r in b.select(*sorted(a.columns)).collect())
        if ra != rb:
            raise AssertionError(f"{name}: flat and nested differ row by row")
        how = "row by row"
    return f"{name}: identical ({da[0]:,} rows, {how})"


def readers(spark, flat, nested, want, rounds: int) -> tuple[list, list]:
    """(timing rows: metric, flat s, nested s; equality notes)."""
    rows, checks = [], []

    def timed(metric, f_df, n_df, check=True):
        if check:
            checks.append(assert_same(metric, f_df, n_df))
        f, n = best_of(rounds, lambda: run_noop(f_df), lambda: run_noop(n_df))
        rows.append((metric, f, n))
        print(f"  {metric}: flat {f:.2f} s, nested {n:.2f} s", flush=True)

    view = flat_view(nested)
    n_flat, n_view, n_arr = flat.count(), view.count(), count_arrays(nested)
    if not n_flat == n_view == n_arr:
        raise AssertionError(f"a count: flat {n_flat}, nested exploded {n_view}, nested size() {n_arr}")
    checks.append(f"a count: identical ({n_flat:,} rows; exploded and size() alike)")
    f, n = best_of(rounds, flat.count, view.count)
    rows.append(("a1 count(*) (nested: inline)", f, n))
    f, n = best_of(rounds, flat.count, lambda: count_arrays(nested))
    rows.append(("a1 count(*) (nested: sum(size))", f, n))
    timed("a2 GROUP BY log, record (nested: inline)", by_record_flat(flat), by_record_flat(view))
    timed("a2 GROUP BY log, record (nested: arrays)", by_record_flat(flat), by_record_arrays(nested))
    timed("a3 full scan, all columns (nested: inline)", flat, view)
    timed("b access pattern (nested: inline)", pattern_flat(flat, want), pattern_flat(view, want))
    timed("b access pattern (nested: arrays)", pattern_flat(flat, want), pattern_nested(nested, want))
    timed("c intervals (nested: inline)", intervals_project(spark, flat), intervals_project(spark, view))
    timed("c intervals (nested: filter arrays)", intervals_project(spark, flat), intervals_arrays(nested))
    timed("d per-record aggregate (nested: inline)", per_record_flat(flat), per_record_flat(view))
    timed("d per-record aggregate (nested: arrays)", per_record_flat(flat), per_record_nested(nested))
    return rows, checks


# -- report ---------------------------------------------------------------------------------------------


def ratio(f: float, n: float) -> str:
    return f"{n / f:.2f}" if f else "-"


def print_table(rows: list[tuple]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"\n{'metric':<{width}}  {'flat':>14}  {'nested':>14}  {'nested/flat':>11}")
    for metric, f, n in rows:
        fmt = (lambda v: f"{v:,.2f}") if isinstance(f, float) else (lambda v: f"{v:,}")
        print(f"{metric:<{width}}  {fmt(f):>14}  {fmt(n):>14}  {ratio(f, n):>11}")


def print_corpus(c: Corpus) -> None:
    print(f"corpus: {c.logs:,} logs with io_ops ({c.replicas:,} of them replicas, {c.recorder_logs} Recorder), "
          f"{c.flat_rows:,} segments = flat rows, {c.nested_rows:,} nested rows, "
          f"{c.flat_rows / max(c.nested_rows, 1):.1f} segments per nested row (at most {c.max_per_row:,})")
    print(f"  nested rows whose group has more than one hostname: {c.hostname_varies}; whose arrays are not in "
          f"the decoder's row order: {c.reordered}; round trip nested -> flat: same rows in every log")
    print(f"  decode {c.decode_s:.1f} s, flat -> nested in Arrow {c.nest_s:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", nargs="+", help="logs, folders or Recorder traces (default: the manifest's logs)")
    ap.add_argument("--manifest", type=Path, default=SHARED / "darshan" / "MANIFEST.csv")
    ap.add_argument("--replicas", type=int, default=0, help="distinct-jobid copies of each DXT-bearing Darshan log")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="iolake-nested-"))
    print(f"work folder: {work}")
    try:
        run(args, work)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run(args, work: Path) -> None:
    t0 = time.perf_counter()
    corpus = build_corpus(args, work)
    if not corpus.flat_rows:
        raise SystemExit("no io_ops rows in the inputs")
    print_corpus(corpus)
    want_path = work / "staged" / "want.parquet"
    pq.write_table(pa.concat_tables(corpus.want), want_path)
    staged = [("staged Parquet bytes (pyarrow)", sum(Path(p).stat().st_size for p in corpus.flat_files),
               sum(Path(p).stat().st_size for p in corpus.nested_files))]
    spark = spark_session(work, args.driver_memory)
    try:
        write_s, paths = write_both(spark, corpus, work, args.rounds)
        use = {k: disk_usage(p) for k, p in paths.items()}
        flat = spark.read.format("delta").load(str(paths["flat"]))
        nested = spark.read.format("delta").load(str(paths["nested"]))
        want = spark.read.parquet(str(want_path))
        table = [
            ("rows (Delta)", flat.count(), nested.count()),
            ("Parquet files", use["flat"]["files"], use["nested"]["files"]),
            ("data bytes on disk", use["flat"]["bytes"], use["nested"]["bytes"]),
            ("_delta_log bytes", use["flat"]["log_bytes"], use["nested"]["log_bytes"]),
            *staged,
            ("Delta write s (best)", write_s["flat"], write_s["nested"]),
        ]
        timings, checks = readers(spark, flat, nested, want, args.rounds)
    finally:
        spark.stop()
    print()
    print_corpus(corpus)
    print_table(table + timings)
    print("\nequality checks (flat vs nested):")
    for note in checks:
        print(f"  {note}")
    print(f"\nnested schema:\n{nested_struct().simpleString()}")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
