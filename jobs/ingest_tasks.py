"""The executor side of ingest: hashing and decoding inside Spark tasks (`mapInArrow`).

Everything here runs in Python workers on executors; nothing here touches the SparkSession.
A task decodes its logs one by one, writes one Parquet file per (bronze table, job_month) to the
run's staging folder (with the Delta statistics of its rows in the file's metadata), and yields
one ledger row per log (with the staged files it wrote).
Files from a failed task attempt are never read: the driver reads only the files named by
the ledger rows of successful attempts.

The derived tables (`derivers`: covers, op_patterns, phases, file_rollups) are computed when a
staged file is written, once for all its logs (`derive_stacked`): a log at a time, their numpy and
Arrow calls would be mostly per-call overhead on small arrays.

A table the decoder streams (`Decoded.streams`: the io_ops of a huge DXT trace) is written batch
by batch to its own staged file as it is decoded, so a task holds one batch of it at a time; the
file is named in the ledger only once the whole log has landed, and is deleted if the log fails.
"""

from __future__ import annotations

import datetime as dt
import functools
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from iolake.lake.files import MONTH_DIR, STATS_KEY, arrow_stats, stats_columns
from readers.base import BadHeader, Decoded, DecodeError
from readers.darshan_header import job_start
from readers.fsio import hash_and_head, is_local, local_path, read_bytes, resolve
from schemas import BRONZE, arrow_schema

HASHED_ARROW = pa.schema(
    [
        ("log_id", pa.string()),
        ("source_uri", pa.string()),
        ("size_bytes", pa.int64()),
        ("mtime_ns", pa.int64()),
        ("kind", pa.string()),
        ("month_hint", pa.string()),
    ]
)
HASHED_SCHEMA = ", ".join(  # the same as a Spark DDL schema, for mapInArrow
    f"{f.name} {'long' if f.type == pa.int64() else 'string'}" for f in HASHED_ARROW
)
LEDGER_ARROW = BRONZE["logs"].arrow_schema
OUTPUT_ARROW = LEDGER_ARROW.append(pa.field("staged", pa.list_(pa.string())))


def _output_schema():
    from pyspark.sql import types as T

    return T.StructType(
        BRONZE["logs"].struct.fields + [T.StructField("staged", T.ArrayType(T.StringType()))]
    )


OUTPUT_SCHEMA = _output_schema()
FLUSH_BYTES = 256 * 1024 * 1024


def staging_dir(lake: str, run_id: str) -> str:
    return f"{lake.rstrip('/')}/_staging/{run_id}"


def cleanup_staging(staging: str) -> None:
    fs, path = resolve(staging)
    try:
        fs.delete_dir(path)
    except FileNotFoundError:
        pass


def hash_partition(batches):
    """Each candidate's log_id (its content hash) and, for a Darshan log, the month its job
    started as its header says (`month_hint`, None when it cannot tell): one read of the file."""
    for batch in batches:
        d = batch.to_pydict()
        ids, hints = [], []
        for u, k in zip(d["source_uri"], d["kind"]):
            log_id, head = hash_and_head(u, k)
            start = job_start(head) if k == "darshan" else None
            ids.append(log_id)
            hints.append(None if start is None else job_month(start))
        yield pa.RecordBatch.from_pydict(
            {
                "log_id": ids,
                **{k: d[k] for k in ("source_uri", "size_bytes", "mtime_ns", "kind")},
                "month_hint": hints,
            },
            schema=HASHED_ARROW,
        )


def job_month(start_time_sec: int | None) -> str:
    if start_time_sec is None or start_time_sec <= 0:
        return "1970-01"
    try:
        return dt.datetime.fromtimestamp(start_time_sec, dt.UTC).strftime("%Y-%m")
    except (OverflowError, OSError, ValueError):
        return "1970-01"


def check_header(jobs: pa.Table, max_nprocs: int) -> None:
    """Reject headers a real job cannot have (seen in real logs: nprocs ~ 4e18, negative run times)."""
    if jobs.num_rows != 1:
        raise BadHeader(f"bad header: {jobs.num_rows} job records")
    job = jobs.to_pylist()[0]
    nprocs = job.get("nprocs")
    if nprocs is None or not 1 <= nprocs <= max_nprocs:
        raise BadHeader(f"bad header: nprocs={nprocs} (expected 1..{max_nprocs})")
    start, end = job.get("start_time_sec"), job.get("end_time_sec")
    if start is not None and end is not None and end < start:
        raise BadHeader(f"bad header: negative run time (start {start} > end {end})")
    rt = job.get("run_time_s")
    if rt is not None and rt < 0:
        raise BadHeader(f"bad header: negative run time ({rt} s)")


@functools.cache
def _bronze_schema(table: str) -> pa.Schema:
    return arrow_schema(BRONZE[table].struct)


@functools.cache
def _stats_columns(table: str) -> list[str]:
    return stats_columns(BRONZE[table])


def with_ingest_columns(
    table: str, t: pa.Table | pa.RecordBatch, log_id: str | pa.Array, month: str
):
    """`t` (a table or a record batch) with the ingest columns log_id (one id, or one per row)
    and job_month, in the bronze table's column order; the constants are filled in by Arrow, not
    Python lists."""
    n = t.num_rows
    cols = {
        "log_id": log_id
        if isinstance(log_id, (pa.Array, pa.ChunkedArray))
        else pa.repeat(pa.scalar(log_id, pa.string()), n),
        "job_month": pa.repeat(pa.scalar(month, pa.string()), n),
    }
    return type(t).from_arrays(
        [cols[c] if c in cols else t.column(c) for c in _bronze_schema(table).names],
        schema=_bronze_schema(table),
    )


@functools.cache
def _decoded_schema(table: str) -> pa.Schema:
    return BRONZE[table].decoded_arrow_schema


def as_decoded(table: str, t: pa.Table) -> pa.Table:
    """`t` in bronze `table`'s decoded schema (its columns without the ingest ones): itself when it
    is already (every native decoder table), else its columns by name, cast; raises when it cannot
    be, so the log, not its task, fails."""
    schema = _decoded_schema(table)
    if t.schema.equals(schema):
        return t
    return pa.Table.from_arrays(
        [t.column(c).cast(f.type) for c, f in zip(schema.names, schema)], schema=schema
    )


def stack_logs(table: str, parts: list[tuple[str, pa.Table]], month: str) -> pa.Table:
    """One bronze `table` of the (log_id, decoded rows) `parts` of one month: the rows concatenated
    and the ingest columns added once. Adding them per log would cost a few
    microseconds per column per table (88 columns in posix) for every log."""
    rows = pa.concat_tables([t for _, t in parts])
    counts = np.fromiter((t.num_rows for _, t in parts), np.int64, len(parts))
    ids = pa.array([i for i, _ in parts], pa.string()).take(
        np.repeat(np.arange(len(parts)), counts)
    )
    return with_ingest_columns(table, rows, ids, month)


class _Decoder:
    """Decodes in-process (native, memory-safe) or in a sandbox worker (pydarshan, always)."""

    def __init__(self, conf):
        self.conf = conf
        self.sandbox = None
        if conf.isolate or conf.decoder == "pydarshan":
            from readers.sandbox import SandboxedDecoder

            self.sandbox = SandboxedDecoder(
                conf.decoder, conf.decode_timeout_s, conf.worker_memory_mb
            )

    def darshan(self, path: str) -> Decoded:
        if self.sandbox is not None:
            return self.sandbox.decode(path)
        from readers.sandbox import decode_in_process

        return decode_in_process(path, self.conf.decoder)

    def close(self):
        if self.sandbox is not None:
            self.sandbox.close()


def _decode_one(dec: _Decoder, row: dict) -> Decoded:
    uri, kind = row["source_uri"], row["kind"]
    if row["size_bytes"] > dec.conf.max_file_bytes:
        raise DecodeError(f"file too large: {row['size_bytes']} bytes > ingest.max_file_bytes")
    if kind == "recorder":
        try:
            from readers.recorder import decode_recorder
        except ImportError:
            raise DecodeError("no Recorder decoder in this build") from None
        if not is_local(uri):
            raise DecodeError("Recorder trace folders are read from local or mounted paths only")
        return decode_recorder(local_path(uri))
    if is_local(uri):
        return dec.darshan(local_path(uri))
    with tempfile.NamedTemporaryFile(suffix=".darshan") as tmp:
        tmp.write(read_bytes(uri, dec.conf.max_file_bytes + 1))
        tmp.flush()
        return dec.darshan(tmp.name)


@dataclass(frozen=True)
class Deriver:
    """The rule of a derived table: called on one log's decoded tables ({name: Arrow table}) it gives the
    log's rows. `stacked` computes the same rows for many logs at once, which is how a decode task runs
    it on the logs of a staged file: `stacked(tables, logs) -> (rows, log of each row)`, with `tables`
    {name: the logs' rows stacked} of the `inputs` tables and `logs` {name: whose each row is}."""

    per_log: Callable
    stacked: Callable
    inputs: tuple

    def __call__(self, tables: dict):
        return self.per_log(tables)


def derivers(conf) -> dict:
    """{derived table: Deriver} for the DERIVED_TABLES the config switches on (`ingest.covers`,
    `ingest.patterns`, `ingest.phases`, `ingest.rollups`; the phases with the tags stage's
    `tags.io_phase_gap_s`). Each is a silver stage's per-log result, computed where the log is decoded
    so that stage need not pass over its segments again. (They import their rules in the decode task:
    on a driver started as `jobs/ingest.py`, `features` would be `jobs/features.py`.)"""
    ic, out = conf.ingest, {}
    if ic.covers:
        out["covers"] = Deriver(
            _covers_of, _covers_stacked, ("io_ops", "posix", "mpiio", "stdio", "files", "heatmap")
        )
    if ic.patterns:
        out["op_patterns"] = Deriver(_patterns_of, _patterns_stacked, ("io_ops",))
    if ic.phases:
        gap = float(conf.tags.io_phase_gap_s)
        out["phases"] = Deriver(
            functools.partial(_phases_at, gap=gap),
            functools.partial(_phases_stacked, gap=gap),
            ("io_ops",),
        )
    if ic.rollups:
        out["file_rollups"] = Deriver(
            _rollups_of,
            _rollups_stacked,
            ("posix", "mpiio", "stdio", "h5f", "h5d", "files", "jobs", "io_ops"),
        )
    return out


def _rollups_of(tables: dict) -> pa.Table:
    from features.file_rollups import log_file_rollups

    return log_file_rollups(tables)


def _rollups_stacked(tables: dict, logs: dict) -> tuple[pa.Table, np.ndarray]:
    from features.file_rollups import file_rollups_of

    return file_rollups_of(tables, logs)


def _covers_of(tables: dict) -> pa.Table:
    from features.covering_sets import log_covers

    return log_covers(tables)


def _covers_stacked(tables: dict, logs: dict) -> tuple[pa.Table, np.ndarray]:
    from features.covering_sets import covers_of

    return covers_of(tables, logs)


def _patterns_of(tables: dict) -> pa.Table:
    from features.file_features import log_op_patterns

    return log_op_patterns(tables.get("io_ops"))


def _patterns_stacked(tables: dict, logs: dict) -> tuple[pa.Table, np.ndarray]:
    from features.file_features import op_patterns_of

    return op_patterns_of(tables.get("io_ops"), logs.get("io_ops"))


def _with_gap(t: pa.Table, gap: float) -> pa.Table:
    t = t.add_column(0, "gap_s", pa.array(np.full(t.num_rows, gap), pa.float64()))
    return t.cast(BRONZE["phases"].decoded_arrow_schema)


def _phases_at(tables: dict, gap: float) -> pa.Table:
    from features.bottleneck_tags import log_phases

    return _with_gap(log_phases(tables.get("io_ops"), gap), gap)


def _phases_stacked(tables: dict, logs: dict, gap: float) -> tuple[pa.Table, np.ndarray]:
    from features.bottleneck_tags import phases_of

    t, at = phases_of(tables.get("io_ops"), gap, logs.get("io_ops"))
    return _with_gap(t, gap), at


DERIVE_BYTES = 64 * 1024 * 1024


def derive_chunks(log_ids: list[str], size: dict, limit: int = DERIVE_BYTES):
    """`log_ids` in runs whose decoded tables hold about `limit` bytes (`size`: each log's; a log
    larger than that alone), so the stacked rules' copies and sort keys stay bounded."""
    chunk, total = [], 0
    for i in log_ids:
        if chunk and total + size[i] > limit:
            yield chunk
            chunk, total = [], 0
        chunk.append(i)
        total += size[i]
    if chunk:
        yield chunk


def derive_stacked(log_ids: list[str], tables: dict, derive: dict, entries: dict) -> dict:
    """{derived table: (rows, log_id of each row)} of the `derive` rules (`Deriver`s), for the logs
    `log_ids` of a staged file, one call per rule; `tables` holds their decoded tables ({name: [(log_id,
    rows)]}, other logs' parts ignored). Each log's row count, 0 included, goes to its ledger entry
    (`entries[log_id]`), as `_derive` does for one log. A rule that fails on the stack runs log by log
    (`_derive`), so only the logs it fails on go without (noted in their entries)."""
    index = {i: k for k, i in enumerate(log_ids)}
    ids = pa.array(log_ids, pa.string())
    stack, logs = {}, {}  # each input table stacked once, for every rule that reads it
    for t in {t for d in derive.values() for t in d.inputs}:
        parts = [(index[i], rows) for i, rows in tables.get(t, ()) if i in index]
        if parts:
            stack[t] = pa.concat_tables([r for _, r in parts]).combine_chunks()
            logs[t] = np.repeat(
                np.fromiter((k for k, _ in parts), np.int64, len(parts)),
                [r.num_rows for _, r in parts],
            )
    out = {}
    for name, d in derive.items():
        try:
            rows, at = d.stacked(
                {t: stack[t] for t in d.inputs if t in stack},
                {t: logs[t] for t in d.inputs if t in logs},
            )
            rows, counts = as_decoded(name, rows), np.bincount(at, minlength=len(log_ids))
            for log_id, n in zip(log_ids, counts.tolist()):
                entries[log_id]["row_counts"].append((name, n))
        except Exception:  # the rule's own error, on the logs it fails on
            rows, at = _derive_each(name, d, log_ids, tables, entries)
        if rows is not None and rows.num_rows:
            out[name] = (rows, ids.take(pa.array(at, pa.int64())))
    return out


def _derive_each(name: str, d: Deriver, log_ids: list[str], tables: dict, entries: dict):
    """`derive_stacked`'s rule `d` run log by log (`_derive`): (rows or None, the log of each row)."""
    index = {i: k for k, i in enumerate(log_ids)}
    own: dict = {i: {} for i in log_ids}
    for t in d.inputs:
        for i, rows in tables.get(t, ()):
            if i in index:
                own[i][t] = rows
    got, at = [], []
    for k, log_id in enumerate(log_ids):
        t = _derive(name, d, own[log_id], entries[log_id])
        if t is not None:
            got.append(t)
            at.append(np.full(t.num_rows, k))
    return (pa.concat_tables(got) if got else None), (
        np.concatenate(at) if at else np.zeros(0, np.int64)
    )


def make_decode_partition(conf, staging: str, run_id: str, derive: dict | None = None):
    """The mapInArrow function of the decode stage, closed over plain (picklable) settings."""

    def decode_partition(batches):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        rules = derive or {}  # run on a staged file's logs at once (`flush`)
        tag = (
            f"{ctx.partitionId():05d}-{ctx.attemptNumber()}-{uuid.uuid4().hex[:8]}"
            if ctx
            else uuid.uuid4().hex
        )
        fs, root = resolve(staging)
        pending: dict[
            tuple[str, str], list[tuple[str, pa.Table]]
        ] = {}  # (table, job_month) -> (log, rows)
        pending_bytes = 0
        staged: list[str] = []
        ledger: list[dict] = []
        waiting: dict[
            str, dict
        ] = {}  # log_id -> ledger entry: the pending logs the `rules` derive for
        sizes: dict[str, int] = {}  # log_id -> bytes of its pending tables
        dec = _Decoder(conf)
        # a point read of one log decodes only the row groups whose log_id statistics hold it
        row_group_rows = conf.row_group_rows or None  # None: pyarrow's 1,048,576

        def uri(path: str) -> str:
            return path if "://" not in staging else f"{staging.split('://')[0]}://{path}"

        def write(table: str, month: str, rows: pa.Table) -> None:
            folder = f"{root}/{table}/{MONTH_DIR}{month}"
            path = f"{folder}/part-{tag}-{len(staged):04d}.parquet"
            fs.create_dir(folder, recursive=True)
            meta = {STATS_KEY: arrow_stats(rows, _stats_columns(table)).encode()}
            pq.write_table(
                rows.replace_schema_metadata(meta),
                path,
                filesystem=fs,
                row_group_size=row_group_rows,
            )
            staged.append(uri(path))

        def flush():
            nonlocal pending_bytes
            months: dict[str, dict] = {}  # month -> {table: [(log_id, rows)]}
            for (table, month), parts in pending.items():
                months.setdefault(month, {})[table] = parts
            for month, tables in months.items():
                for table, parts in tables.items():
                    if parts:
                        write(table, month, stack_logs(table, parts, month))
                logs = [i for i, e in waiting.items() if e["job_month"] == month]
                got: dict[str, list] = {}
                for chunk in derive_chunks(logs, sizes):  # the rules on many logs at a time
                    for name, part in derive_stacked(chunk, tables, rules, waiting).items():
                        got.setdefault(name, []).append(part)
                for name, parts in got.items():
                    ids = pa.chunked_array([i for _, i in parts]).combine_chunks()
                    write(
                        name,
                        month,
                        with_ingest_columns(
                            name, pa.concat_tables([r for r, _ in parts]), ids, month
                        ),
                    )
            pending.clear()
            waiting.clear()
            sizes.clear()
            pending_bytes = 0

        def stage_stream(table: str, batches, log_id: str, month: str) -> tuple[str | None, int]:
            name = f"part-{tag}-{len(staged):04d}-stream-{uuid.uuid4().hex[:6]}.parquet"
            path = f"{root}/{table}/{MONTH_DIR}{month}/{name}"
            return _stage(fs, path, uri(path), table, batches, log_id, month)

        try:
            for batch in batches:
                for row in batch.to_pylist():
                    entry, tables, streamed = _decode_row(
                        dec, row, run_id, conf.max_nprocs, stage_stream
                    )
                    staged.extend(streamed)
                    ledger.append(entry)
                    if (
                        rules
                        and entry["row_counts"] is not None
                        and not _streamed(dict(entry["row_counts"]), tables)
                    ):
                        waiting[entry["log_id"]] = entry  # decoded, its segments in memory
                    size = 0
                    for t, tab in tables.items():
                        pending.setdefault((t, entry["job_month"]), []).append(
                            (entry["log_id"], tab)
                        )
                        size += (
                            tab.get_total_buffer_size()
                        )  # cheaper than `nbytes`, which walks each column
                    sizes[entry["log_id"]] = size
                    pending_bytes += size
                    if pending_bytes > FLUSH_BYTES:
                        flush()
            flush()
        finally:
            dec.close()
        for e in ledger:
            e["staged"] = staged
        if ledger:
            yield pa.RecordBatch.from_pylist(ledger, schema=OUTPUT_ARROW)

    return decode_partition


def _stage(
    fs, path: str, path_uri: str, table: str, batches, log_id: str, month: str
) -> tuple[str | None, int]:
    """Writes a streamed table's batches (with log_id and job_month) to one Parquet file, a row
    group per batch; (its URI, rows), or (None, 0) when it has no rows. On error the file is
    deleted and the error raised."""
    rows = 0
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    try:
        with pq.ParquetWriter(path, _bronze_schema(table), filesystem=fs) as writer:
            for batch in batches:
                if batch.num_rows:
                    writer.write_batch(with_ingest_columns(table, batch, log_id, month))
                    rows += batch.num_rows
    except BaseException:
        _delete(fs, path)
        raise
    if not rows:
        _delete(fs, path)
        return None, 0
    return path_uri, rows


def _delete(fs, path: str) -> None:
    try:
        fs.delete_file(path)
    except (FileNotFoundError, OSError):
        pass


def _decode_row(
    dec: _Decoder, row: dict, run_id: str, max_nprocs: int, stage_stream=None
) -> tuple[dict, dict, list]:
    """Decodes one log: (its ledger entry, its tables in their decoded schemas, the staged files of its
    streamed tables). The tables have no log_id or job_month: `stack_logs` adds them to many logs
    at once.

    `stage_stream(table, batches, log_id, month) -> (uri or None, rows)` writes a streamed
    table; without it streamed tables are read into memory like the others. The derived tables
    come later, for many logs at once (`derive_stacked`), for the logs not `_streamed`."""
    t0 = time.monotonic()
    entry = {
        "log_id": row["log_id"],
        "job_month": None,
        "source_uri": row["source_uri"],
        "size_bytes": row["size_bytes"],
        "mtime_ns": row["mtime_ns"],
        "format": row["kind"],
        "format_version": None,
        "writer_version": None,
        "compression": None,
        "decoder": None,
        "status": "quarantined",
        "reason": None,
        "modules": None,
        "partial_modules": None,
        "modules_info": None,
        "notes": None,
        "row_counts": None,
        "decode_s": None,
        "ingest_run_id": run_id,
        "ingested_at": dt.datetime.now(dt.UTC),
        "jobid": None,
    }
    tables: dict[str, pa.Table] = {}
    streamed: list[str] = []
    try:
        d = _decode_one(dec, row)
        entry.update(
            format=d.format,
            format_version=d.format_version,
            writer_version=d.writer_version,
            compression=d.compression,
            decoder=d.decoder,
            modules=d.modules,
            partial_modules=sorted({*d.partial_modules, *d.damaged}),
            modules_info=d.modules_info or None,
            notes=d.notes,
        )
        check_header(d.tables["jobs"], max_nprocs)
        month = job_month(d.tables["jobs"].column("start_time_sec")[0].as_py())
        counts: dict[str, int] = {}
        decoded = d.tables if stage_stream else d.all_tables()
        for name, t in decoded.items():
            if t.num_rows:
                tables[name] = as_decoded(name, t)
                counts[name] = t.num_rows
        for name, batches in d.streams.items() if stage_stream else ():
            path, n = stage_stream(name, batches(), row["log_id"], month)
            if path:
                streamed.append(path)
                counts[name] = n
        entry.update(
            job_month=month,
            status=d.status,
            reason=d.reason,
            row_counts=list(counts.items()),
            jobid=d.tables["jobs"].column("jobid")[0].as_py(),
        )
    except Exception as e:  # never let one log fail the stage
        if isinstance(e, DecodeError):
            entry.update(status="quarantined", reason=str(e) or type(e).__name__)
        else:
            entry.update(status="quarantined", reason=f"ingest error: {type(e).__name__}: {e}")
        tables = {}
        _unstage(streamed)
        streamed = []
    entry["decode_s"] = time.monotonic() - t0
    return entry, tables, streamed


def _derive(name: str, fn, decoded: dict, entry: dict) -> pa.Table | None:
    """The derived table `name` (e.g. the log's covering set, bronze/covers) computed by `fn` from one
    log's `decoded` tables, or None when it has no rows; its row count, 0 included, goes to the log's
    ledger entry: the count is how the stage that owns the result knows ingest computed it. A log
    whose derivation fails gets none, keeps its other rows and says why in its notes. (A log whose
    io_ops were streamed never gets here: the decode task leaves it out, `_streamed`.)"""
    try:
        t = fn(decoded)
    except Exception as e:  # the stage's Spark pass will compute it (or fail there, as before)
        entry["notes"] = [
            *(entry["notes"] or []),
            f"{name}: not computed at ingest ({type(e).__name__}: {e})",
        ]
        return None
    entry["row_counts"].append((name, t.num_rows))
    return as_decoded(name, t) if t.num_rows else None


def _streamed(counts: dict, tables: dict) -> bool:
    """Were the log's segments streamed to disk (counted, not among its tables in memory)? Then it
    gets no derived table: each stage computes its own in Spark."""
    return "io_ops" in counts and "io_ops" not in tables


def _unstage(uris: list[str]) -> None:
    """Deletes the staged files of a log that failed after they were written."""
    for u in uris:
        fs, path = resolve(u)
        _delete(fs, path)
