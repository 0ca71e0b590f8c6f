"""Whether two builds of the native decoder return the same tables: each dumps what it decodes
from every shared Darshan log, then the dumps are compared.

    python -m bench.decoder_same dump OUT      # with one build's extension and checkout
    python -m bench.decoder_same compare A B   # schema and rows of every table, and the rest

Per log: `decode(path)` (its tables and every other field of `Decoded`, or the error it raised)
and io_ops streamed from every DXT log in batches of 1,000 and 5,000 rows (each batch's rows and
their concatenation). Tables are equal when their schemas (with field metadata) and rows are.
"""

from __future__ import annotations

import dataclasses
import pickle
import sys
from pathlib import Path

import pyarrow as pa

from bench.common import parser, result, shared

DATA = shared("darshan")
BATCHES = (1000, 5000)


def _outcome(path: Path) -> dict:
    from readers import native_darshan
    from readers.base import DecodeError

    try:
        d = native_darshan.decode(path)
    except DecodeError as err:
        return {"error": (type(err).__name__, str(err))}
    out = {f.name: getattr(d, f.name) for f in dataclasses.fields(d) if f.name != "streams"}
    out["streams"] = {k: pa.Table.from_batches(list(v())) for k, v in d.streams.items()}
    if "DXT_POSIX" in d.modules or "DXT_MPIIO" in d.modules:
        for rows in BATCHES:
            s = native_darshan.decode(path, stream_dxt_over=0, batch_rows=rows).streams
            out[f"io_ops/{rows}"] = [b.num_rows for b in s["io_ops"]()] if s else None
            out[f"io_ops_table/{rows}"] = pa.Table.from_batches(list(s["io_ops"]())) if s else None
    return out


def dump(into: Path) -> int:
    logs = sorted(DATA.rglob("*.darshan"))
    with open(into, "wb") as fh:
        pickle.dump({str(p.relative_to(DATA)): _outcome(p) for p in logs}, fh)
    print(f"{len(logs)} logs dumped to {into}")
    return len(logs)


def _same(a, b) -> bool:
    if isinstance(a, pa.Table) and isinstance(b, pa.Table):
        return a.schema.equals(b.schema, check_metadata=True) and a.equals(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def compare(a: Path, b: Path) -> list[str]:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        left, right = pickle.load(fa), pickle.load(fb)
    diffs = [f"{log}: only in one dump" for log in left.keys() ^ right.keys()]
    for log in sorted(left.keys() & right.keys()):
        x, y = left[log], right[log]
        diffs += [
            f"{log}: {k} differs" for k in x.keys() | y.keys() if not _same(x.get(k), y.get(k))
        ]
    tables = sum(len(v.get("tables", {})) for v in left.values())
    print(f"{len(left)} logs, {tables} tables: {len(diffs)} differences")
    for d in diffs:
        print("  " + d)
    return diffs


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("how", choices=["dump", "compare"])
    ap.add_argument("paths", type=Path, nargs="+")
    args = ap.parse_args(argv)
    if args.how == "dump":
        n = dump(args.paths[0])
        result("decoder_same", f"{n} logs dumped")
        return 0
    diffs = compare(*args.paths[:2])
    result("decoder_same", f"{len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
