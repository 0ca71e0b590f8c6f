"""Decoder throughput: the native decoder against pydarshan and against merely inflating the logs.

    python -m bench.decoder [--repeat N] [--pydarshan-repeat N] [--robustness] [--logs DIR]
    python -m bench.decoder --quick          # the wheel's sample logs, once each way
    python -m bench.decoder --cpu            # CPU seconds instead of wall (a shared machine)

Over the same logs, in one process (default: the shared Darshan logs pydarshan reads, MANIFEST
`reads`; `--logs DIR`: every log under DIR):
  * pydarshan 3.5.0: DarshanReport(read_all=True) + to_df() of every module (the baseline);
  * the native decoder: readers.native_darshan.decode(path) -> all bronze Arrow tables;
  * the floor: merely inflating every compressed region with Python's zlib/bz2
    (and with the Rust inflater alone, iolake_native.inflate_only).
The ways take turns round by round (best of each). Prints logs/s and the ratios (goals: native
>= 50x pydarshan; native at most 1x the time of Python's inflate).
`--robustness` also truncates every shared log at 200 evenly spaced offsets and flips bits,
checking that only DecodeError is ever raised.
"""

from __future__ import annotations

import bz2
import csv
import random
import struct
import sys
import time
import zlib
from pathlib import Path

from bench.common import parser, result, sample_logs, shared

DATA = shared("darshan")


def readable_logs() -> list[Path]:
    with open(DATA / "MANIFEST.csv", newline="") as fh:
        return [DATA / r["path"] for r in csv.DictReader(fh) if r["pydarshan_3_5_0"] == "reads"]


def _inflate_all(comp: int, blob: bytes) -> int:
    """Decompress a region of concatenated zlib/bzip2 streams; returns bytes produced."""
    total = 0
    while blob:
        d = zlib.decompressobj() if comp == 0 else bz2.BZ2Decompressor()
        total += len(d.decompress(blob))
        blob = d.unused_data
    return total


def inflate_regions(path: Path) -> int:
    b = path.read_bytes()
    minor = int(b[2:4])
    swap = struct.unpack_from("<q", b, 8)[0] != 6567223
    e = ">" if swap else "<"
    maps_off, n, hdr = (32, 65, 1328) if minor >= 41 else (24, 17, 360)
    maps = [struct.unpack_from(e + "QQ", b, maps_off + 16 * i) for i in range(n)]
    comp = b[16]
    first = min((o for o, ln in maps if ln), default=len(b))
    regions = [(hdr, first - hdr)] + [m for m in maps if m[1]]
    total = 0
    for off, ln in regions:
        blob = b[off : off + ln]
        total += len(blob) if comp == 2 else _inflate_all(comp, blob)
    return total


def pydarshan_full(path: Path) -> None:
    import darshan

    report = darshan.DarshanReport(str(path), read_all=True)
    for recs in report.records.values():
        try:
            recs.to_df()
        except Exception:  # to_df() is not implemented for some modules (APMPI, BG/Q, ...)
            pass


def timeit(fn, logs, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for p in logs:
            fn(p)
        best = min(best, time.perf_counter() - t)
    return best


def alternating(ways: dict, logs, repeats: dict, clock=time.perf_counter) -> dict[str, float]:
    """Best time of each way over `logs`, the ways taking turns round by round (way k runs in
    the first repeats[k] rounds), so that a shared machine's load falls on all of them alike.
    `clock`: time.perf_counter (wall) or time.process_time (this process's CPU time)."""
    best = dict.fromkeys(ways, float("inf"))
    for r in range(max(repeats.values())):
        for k, fn in ways.items():
            if r < repeats[k]:
                t = clock()
                for p in logs:
                    fn(p)
                best[k] = min(best[k], clock() - t)
    return best


def robustness(n_offsets: int = 200, n_flips: int = 50) -> None:
    from readers import native_darshan
    from readers.base import DecodeError

    logs = sorted(p for p in DATA.rglob("*.darshan"))
    rng = random.Random(42)
    count = errors = 0
    t = time.perf_counter()
    for p in logs:
        data = p.read_bytes()
        mutants = [data[: len(data) * k // (n_offsets + 1)] for k in range(1, n_offsets + 1)]
        for _ in range(n_flips):
            b = bytearray(data)
            for _ in range(rng.randint(1, 16)):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
            mutants.append(bytes(b))
        for m in mutants:
            count += 1
            try:
                native_darshan.decode(m)
            except DecodeError:
                errors += 1
    dt = time.perf_counter() - t
    print(
        f"robustness: {len(logs)} logs x ({n_offsets} truncations + {n_flips} bit-flip mutants) = "
        f"{count} inputs in {dt:.1f} s: {count - errors} decoded, {errors} DecodeError, 0 other exceptions"
    )


def main(argv=None) -> int:
    ap = parser(__spec__.name, __doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pydarshan-repeat", type=int, default=1)
    ap.add_argument("--robustness", action="store_true")
    ap.add_argument("--logs", type=Path, help="decode every log under this folder instead")
    ap.add_argument("--quick", action="store_true", help="the sample logs, each way once")
    ap.add_argument(
        "--cpu", action="store_true", help="time CPU seconds of this process (shared machine)"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.logs, args.repeat, args.pydarshan_repeat = sample_logs(), 1, 1

    import iolake_native

    from readers import native_darshan

    logs = sorted(args.logs.rglob("*.darshan")) if args.logs else readable_logs()
    size = sum(p.stat().st_size for p in logs)
    print(
        f"{len(logs)} logs{'' if args.logs else ' pydarshan reads'}, {size / 1e6:.1f} MB compressed"
    )

    t = alternating(
        {
            "native": native_darshan.decode,
            "inflate": inflate_regions,
            "rust_inflate": lambda p: iolake_native.inflate_only(p.read_bytes()),
            "pydarshan": pydarshan_full,
        },
        logs,
        {
            "native": args.repeat,
            "inflate": args.repeat,
            "rust_inflate": args.repeat,
            "pydarshan": args.pydarshan_repeat,
        },
        time.process_time if args.cpu else time.perf_counter,
    )
    t_native, t_inflate, t_rust_inflate, t_pyd = (
        t["native"],
        t["inflate"],
        t["rust_inflate"],
        t["pydarshan"],
    )
    n = len(logs)
    if args.cpu:
        print("CPU seconds of this process (--cpu), not wall time")
    print(f"pydarshan read_all + to_df : {n / t_pyd:9.1f} logs/s  ({t_pyd:.2f} s)")
    print(f"native decode -> Arrow     : {n / t_native:9.1f} logs/s  ({t_native:.3f} s)")
    print(f"inflate only (Python zlib) : {n / t_inflate:9.1f} logs/s  ({t_inflate:.3f} s)")
    print(
        f"inflate only (Rust)        : {n / t_rust_inflate:9.1f} logs/s  ({t_rust_inflate:.3f} s)"
    )
    print(f"native vs pydarshan        : {t_pyd / t_native:9.1f}x faster   (goal >= 50x)")
    print(f"native vs inflate (zlib)   : {t_native / t_inflate:9.2f}x the time (goal <= 1x)")
    print(f"native vs inflate (Rust)   : {t_native / t_rust_inflate:9.2f}x the time")
    print(
        f"ceiling (pydarshan / zlib) : {t_pyd / t_inflate:9.1f}x  "
        "(no decoder that inflates can beat this ratio by much)"
    )
    if args.robustness:
        robustness()
    result(
        "decoder",
        f"{len(logs)} logs: native {n / t_native:.1f} logs/s, {t_pyd / t_native:.1f}x pydarshan, "
        f"{t_native / t_inflate:.2f}x the time of inflating",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
