"""What every trace decoder returns, and the errors that send a trace to the quarantine.

A decoder turns one trace (a Darshan log file, a Recorder trace folder) into a `Decoded`:
one `pyarrow.Table` per bronze table, each with exactly `TABLES[name].decoded_arrow_schema`
(the ingest stage adds `log_id` and `job_month`), plus facts for the ledger.
A decoder never returns garbage: it raises a `DecodeError` whose message is the reason
recorded in the quarantine.

A table too large to hold at once (the io_ops of a huge DXT trace) comes in `streams` instead of
`tables`: a callable returning an iterator of `pyarrow.RecordBatch`es with the table's schema.
The decode has already checked what the stream holds, so `status`, `notes` and `damaged` are
final when the decoder returns; a stream raises a `DecodeError` only if the trace changed under it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa


class DecodeError(Exception):
    """The trace cannot be decoded; `str(err)` is the quarantine reason."""

    kind = "corrupt"


class UnsupportedFormat(DecodeError):
    kind = "unsupported"


class BadHeader(DecodeError):
    kind = "bad_header"


class DecoderCrash(DecodeError):
    kind = "crash"


class ResourceLimit(DecodeError):
    kind = "limit"


@dataclass
class Decoded:
    tables: dict[str, pa.Table]
    format: str  # darshan | recorder
    format_version: str | None = None
    writer_version: str | None = None
    compression: str | None = None
    decoder: str = ""
    modules: list[str] = field(default_factory=list)
    partial_modules: list[str] = field(default_factory=list)
    # every module region of the log, in module index order: {"module", "version" (the log's
    # module format version), "region_bytes" (compressed bytes of its region)}; bronze/logs
    modules_info: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # modules whose region was cut short or corrupt -> why; their records are not in `tables`
    damaged: dict[str, str] = field(default_factory=dict)
    # tables too large to hold at once -> a callable returning an iterator of their record batches
    streams: dict[str, Callable[[], Iterator[pa.RecordBatch]]] = field(default_factory=dict)

    def all_tables(self) -> dict[str, pa.Table]:
        """`tables` plus every stream read into a table (all in memory: for logs that fit)."""
        out = dict(self.tables)
        for name, batches in self.streams.items():
            out[name] = _read_stream(batches())
        return out

    @property
    def status(self) -> str:
        return "partial" if self.partial_modules or self.damaged else "ok"

    @property
    def reason(self) -> str | None:
        """Why the log is partial (None when it is whole): damaged modules first, then the modules
        Darshan itself flagged partial (it ran out of record memory)."""
        parts = [f"damaged module {m}: {why}" for m, why in sorted(self.damaged.items())]
        if self.partial_modules:
            parts.append(f"partial modules: {', '.join(self.partial_modules)}")
        return "; ".join(parts) or None


def _read_stream(batches: Iterator[pa.RecordBatch]) -> pa.Table:
    first = next(batches)  # a stream yields at least one batch (its schema), maybe empty
    return pa.Table.from_batches([first, *batches])
