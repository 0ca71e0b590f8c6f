"""What every trace decoder returns, and the errors that send a trace to the quarantine.

A decoder turns one trace (a Darshan log file, a Recorder trace folder) into a `Decoded`:
one `pyarrow.Table` per bronze table, each with exactly `TABLES[name].decoded_arrow_schema`
(the ingest stage adds `log_id` and `job_month`), plus facts for the ledger.
A decoder never returns garbage: it raises a `DecodeError` whose message is the reason
recorded in the quarantine.
"""
from __future__ import annotations

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
    notes: list[str] = field(default_factory=list)
    # modules whose region was cut short or corrupt -> why; their records are not in `tables`
    damaged: dict[str, str] = field(default_factory=dict)

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
