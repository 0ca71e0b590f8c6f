"""Build a large corpus of *distinct* Darshan logs from real ones, for scale benchmarks.

    python -m bench.make_corpus OUT --logs 100000 [--templates DIR ...] [--per-dir 1000]
                                [--month YYYY-MM [--months N]] [--first-jobid N]
    python -m bench.make_corpus --quick      # 500 logs from the wheel's sample logs, then deleted

Hard links or copies of the shared logs would all hash to the same 1,252 contents, and ingest
keeps one log per content (sha256), so a 100,000-log benchmark of copies would decode 100,000
files but commit only ~1,250 logs. Instead every output log is a template with its job region
rewritten: a new, unique jobid (and nothing else), re-compressed with the template's own codec,
and every region offset after it shifted in the header map. The result is a valid Darshan log
that decodes to the template's records with another jobid, so the corpus has the size mix and
the record mix of the templates (the shared logs and the IOR sweep's logs by default).

Templates the native decoder does not read cleanly (garbage headers, unsupported versions) are
left out; the count is printed. Output files land in OUT/dNNNN/ folders of `--per-dir` logs,
the way a centre's nightly drop is spread over folders.

`--month 2026-10` also moves every job's start (and, by the same amount, its end) into that
month, the way one night's drop holds the jobs of one month (the templates span many months).
`--month 2025-01 --months 18` spreads them over 18 months from January 2025 instead, the k-th
copy of each template in month k mod 18, so every template (an application of the fleet view)
runs in every month and the marts have trends to draw.
"""

from __future__ import annotations

import bz2
import struct
import sys
import time
import zlib
from pathlib import Path

from bench.common import SHARED, parser, result, sample_logs, scratch
from readers.darshan_header import DARSHAN_MAGIC, JOB_START_AT, header_layout

ZLIB, BZIP2, NONE = 0, 1, 2


def _inflate(comp: int, blob: bytes) -> bytes:
    if comp == NONE:
        return blob
    out = []
    while blob:
        d = zlib.decompressobj() if comp == ZLIB else bz2.BZ2Decompressor()
        out.append(d.decompress(blob))
        blob = d.unused_data
    return b"".join(out)


def _deflate(comp: int, data: bytes) -> bytes:
    if comp == NONE:
        return data
    return zlib.compress(data) if comp == ZLIB else bz2.compress(data)


class Template:
    """A parsed log: header fields, the inflated job region, and the bytes after it."""

    def __init__(self, path: Path):
        b = path.read_bytes()
        self.path = path
        minor = int(b[2:4])  # "3.41" -> 41
        (raw,) = struct.unpack_from("<q", b, 8)
        if raw == DARSHAN_MAGIC:
            self.e = "<"
        elif struct.unpack_from(">q", b, 8)[0] == DARSHAN_MAGIC:
            self.e = ">"
        else:
            raise ValueError("bad magic")
        self.minor = minor
        self.comp = b[16]
        if self.comp not in (ZLIB, BZIP2, NONE):
            raise ValueError(f"compression type {self.comp}")
        self.maps_off, self.nmaps, self.hdr = header_layout(minor)
        self.maps = [
            list(struct.unpack_from(self.e + "QQ", b, self.maps_off + 16 * i))
            for i in range(self.nmaps)
        ]
        used = [o for o, ln in self.maps if ln]
        job_end = min(used) if used else len(b)
        self.head = bytearray(b[: self.hdr])
        self.job = _inflate(self.comp, b[self.hdr : job_end])
        self.rest = b[job_end:]
        self.job_end = job_end
        self.jobid_at = 8 * (6 if minor >= 41 else 4)
        # job region: uid, start_time[_sec, _nsec], end_time[_sec, _nsec], nprocs, jobid, ...
        self.start_at = JOB_START_AT
        self.end_at = JOB_START_AT + (16 if minor >= 41 else 8)  # after start's nsec in 3.41
        if len(self.job) < self.jobid_at + 8:
            raise ValueError("job region too short")

    def with_jobid(self, jobid: int, start: int | None = None) -> bytes:
        """The log with `jobid`, and with its start moved to `start` (epoch seconds) when given."""
        job = bytearray(self.job)
        struct.pack_into(self.e + "q", job, self.jobid_at, jobid)
        if start is not None:
            (s0,) = struct.unpack_from(self.e + "q", job, self.start_at)
            (e0,) = struct.unpack_from(self.e + "q", job, self.end_at)
            struct.pack_into(self.e + "q", job, self.start_at, start)
            struct.pack_into(self.e + "q", job, self.end_at, start + max(0, e0 - s0))
        blob = _deflate(self.comp, bytes(job))
        shift = (self.hdr + len(blob)) - self.job_end
        head = bytearray(self.head)
        for i, (off, ln) in enumerate(self.maps):
            if ln:
                struct.pack_into(self.e + "QQ", head, self.maps_off + 16 * i, off + shift, ln)
        return bytes(head) + blob + self.rest


def default_templates() -> list[Path]:
    found = []
    for sub in ("darshan", "iosweep/darshan"):
        d = SHARED / sub
        if d.is_dir():
            found += sorted(p for p in d.rglob("*") if p.is_file() and ".darshan" in p.name)
    return found


def load_templates(paths: list[Path]) -> tuple[list[Template], int]:
    """Templates whose rewritten form the native decoder reads with the new jobid."""
    from readers.native_darshan import decode_darshan

    good, bad = [], 0
    for p in paths:
        try:
            t = Template(p)
            probe = t.with_jobid(7_000_000_000_001)
            tables = decode_darshan(probe)
            if tables["jobs"].column("jobid").to_pylist() != [7_000_000_000_001]:
                raise ValueError("jobid did not round-trip")
            good.append(t)
        except Exception:
            bad += 1
    return good, bad


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("out", type=Path, nargs="?", help="output folder (required unless --quick)")
    ap.add_argument("--logs", type=int, default=100_000)
    ap.add_argument(
        "--templates",
        nargs="*",
        type=Path,
        help="template logs or folders (default: shared logs + IOR sweep)",
    )
    ap.add_argument("--per-dir", type=int, default=1000)
    ap.add_argument("--first-jobid", type=int, default=9_000_000_000)
    ap.add_argument(
        "--month", help="move every job's start into this month (YYYY-MM): one night's drop"
    )
    ap.add_argument(
        "--months",
        type=int,
        default=1,
        help="with --month: spread the jobs over this many months from it, each template in "
        "every month (a lake with trends for the fleet view)",
    )
    ap.add_argument(
        "--quick", action="store_true", help="500 logs from the sample logs into a scratch folder"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.logs, args.templates, args.per_dir = 500, [sample_logs()], 100
        with scratch("corpus") as out:
            args.out = out
            return make(args)
    if args.out is None:
        ap.error("give OUT, the output folder")
    return make(args)


def month_starts(first: str, n: int) -> list[int]:
    """The Unix times of the first second of `n` consecutive months from `first` (YYYY-MM, UTC)."""
    import datetime as dt

    d = dt.datetime.strptime(first, "%Y-%m").replace(tzinfo=dt.UTC)
    out = []
    for k in range(n):
        y, m = divmod(d.month - 1 + k, 12)
        out.append(int(d.replace(year=d.year + y, month=m + 1).timestamp()))
    return out


def make(args) -> int:
    """Writes the corpus `args` describes; returns the exit code."""
    month0 = None
    if args.months > 1 and not args.month:
        raise SystemExit("--months needs --month, the first month (YYYY-MM)")
    if args.month:
        month0 = month_starts(args.month, max(1, args.months))
    paths = []
    for t in args.templates or []:
        paths += (
            sorted(p for p in t.rglob("*") if p.is_file() and ".darshan" in p.name)
            if t.is_dir()
            else [t]
        )
    paths = paths or default_templates()
    if not paths:
        raise SystemExit(f"no template logs (looked under {SHARED}); pass --templates")
    t0 = time.perf_counter()
    templates, skipped = load_templates(paths)
    print(
        f"{len(templates)} templates usable, {skipped} left out (not decodable); {time.perf_counter() - t0:.1f} s"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    total = 0
    t0 = time.perf_counter()
    for i in range(args.logs):
        t = templates[i % len(templates)]
        d = args.out / f"d{i // args.per_dir:04d}"
        if i % args.per_dir == 0:
            d.mkdir(exist_ok=True)
        start = (  # the k-th copy of a template in month k mod N, spread over the month's days
            None
            if month0 is None
            else month0[(i // len(templates)) % len(month0)] + (i * 7919) % (27 * 86400)
        )
        data = t.with_jobid(args.first_jobid + i, start)
        (d / f"{i:07d}_{t.path.name}").write_bytes(data)
        total += len(data)
        if (i + 1) % 10_000 == 0:
            print(
                f"  {i + 1:,} logs, {total / 2**20:,.0f} MiB, {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
    secs = time.perf_counter() - t0
    print(f"wrote {args.logs:,} distinct logs, {total / 2**20:,.1f} MiB, under {args.out}")
    result(
        "make_corpus",
        f"{args.logs:,} logs from {len(templates)} templates, {total / 2**20:,.1f} MiB "
        f"in {secs:,.1f} s ({args.logs / secs:,.0f} logs/s)",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
