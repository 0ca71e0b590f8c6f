"""Synthetic Darshan logs of every (log format, module version, byte order, compression)
combination darshan-util 3.5.0 reads, and the reference decode to compare them with.

`Gen(seed, minor, big, comp).log(versions)` writes a well-formed log only (libdarshan-util is not
safe on malformed ones): random counters, name records, a mount table, and for each module
records in the layout of the requested *old* version, so the native up-conversions are checked
against darshan-util's. Used by tests/readers/test_native_darshan_synthetic.py and
native/fuzz/differential.py.
"""

from __future__ import annotations

import random
import struct
import zlib

import numpy as np
import pyarrow as pa

CURRENT = [
    "NULL",
    "POSIX",
    "MPI-IO",
    "H5F",
    "H5D",
    "PNETCDF_FILE",
    "PNETCDF_VAR",
    "BG/Q",
    "LUSTRE",
    "STDIO",
    "DXT_POSIX",
    "DXT_MPIIO",
    "MDHIM",
    "APXC",
    "APMPI",
    "HEATMAP",
    "DFS",
    "DAOS",
]

# record sizes (bytes, base record included) of each module version
SIZES = {
    ("POSIX", 1): 680,
    ("POSIX", 2): 648,
    ("POSIX", 3): 664,
    ("POSIX", 4): 704,
    ("MPI-IO", 1): 544,
    ("MPI-IO", 2): 544,
    ("MPI-IO", 3): 560,
    ("STDIO", 1): 240,
    ("STDIO", 2): 248,
    ("H5F", 1): 40,
    ("H5F", 2): 56,
    ("H5F", 3): 80,
    ("H5D", 1): 904,
    ("H5D", 2): 912,
    ("PNETCDF_FILE", 1): 48,
    ("PNETCDF_FILE", 2): 64,
    ("PNETCDF_FILE", 3): 152,
    ("PNETCDF_VAR", 1): 1120,
    ("DFS", 1): 584,
    ("DAOS", 1): 696,
}


def file_modules(minor: int) -> list[str]:
    """Module names by header index, as the log format `3.<minor>` numbers them."""
    mods = list(CURRENT)
    if minor < 41:
        mods.remove("PNETCDF_VAR")
    if minor < 20:
        mods.remove("H5D")
    return mods[:16] if minor < 41 else mods


class Gen:
    """A well-formed log of format `3.<minor>`, byte order `big`, compression `comp`, from `seed`."""

    def __init__(self, seed: int, minor: int, big: bool, comp: int):
        self.r = random.Random(seed)
        self.minor, self.big, self.comp = minor, big, comp
        self.e = ">" if big else "<"
        self.ids = [self.r.getrandbits(64) for _ in range(6)]

    def q(self, *vals) -> bytes:
        return struct.pack(self.e + f"{len(vals)}q", *vals)

    def Q(self, *vals) -> bytes:
        return struct.pack(self.e + f"{len(vals)}Q", *vals)

    def i64(self) -> int:
        return self.r.choice([0, 1, -1, self.r.randrange(1000), self.r.getrandbits(63) - (1 << 62)])

    def f64(self) -> float:
        return self.r.choice([0.0, -1.0, self.r.random() * 100, self.r.uniform(-1e9, 1e9)])

    def words(self, n: int, floats_from: int) -> bytes:
        out = b""
        for i in range(n):
            out += struct.pack(self.e + "d", self.f64()) if i >= floats_from else self.q(self.i64())
        return out

    def record(self, mod: str, ver: int) -> bytes:
        size = SIZES[(mod, ver)]
        base = self.Q(self.r.choice(self.ids)) + self.q(self.r.choice([-1, 0, 1, 3]))
        body = size - 16
        # int counters first, then doubles; the exact split matters little to the test
        nwords = body // 8
        nints = {"H5F": 1 if ver < 3 else 3}.get(mod, nwords * 3 // 4)
        raw = self.words(nwords, nints) + bytes(body - nwords * 8)
        if mod == "POSIX" and ver == 1:
            # word 6: fopen count; a record with STDIO counters mixed in is skipped
            fopens = self.r.randrange(1, 5) if self.r.random() < 0.3 else self.r.choice([0, -1])
            raw = raw[:48] + self.q(fopens) + raw[56:]
        return base + raw

    def lustre(self, ver: int) -> bytes:
        rid, rank = self.r.choice(self.ids), -1
        if ver == 1:
            n = self.r.randrange(0, 5)
            return self.Q(rid) + self.q(rank, 1, 2, 3, 1 << 20, n) + self.q(*range(n))
        ncomp = self.r.randrange(1, 4)
        comps, osts = b"", []
        for _ in range(ncomp):
            sc = self.r.randrange(0, 4)
            comps += self.q(1 << 20, sc, 0, self.i64(), 0, -1, self.i64())
            comps += self.r.choice([b"pool1", b"", b"0123456789abcdef"]).ljust(16, b"\0")
            osts += [self.r.randrange(100) for _ in range(sc)]
        return self.Q(rid) + self.q(rank, ncomp, len(osts)) + comps + self.q(*osts)

    def dxt(self) -> bytes:
        w, rd = self.r.randrange(0, 4), self.r.randrange(0, 4)
        host = self.r.choice([b"nid0001", b"x" * 64, b"h"]).ljust(64, b"\0")[:64]
        out = (
            self.Q(self.r.choice(self.ids)) + self.q(self.r.randrange(4), -1) + host + self.q(w, rd)
        )
        for _ in range(w + rd):
            out += self.q(self.i64(), self.r.randrange(1 << 20)) + struct.pack(
                self.e + "2d", self.f64(), self.f64()
            )
        return out

    def compress(self, b: bytes) -> bytes:
        if self.comp == 2:
            return b
        # darshan-util restarts the stream: write some regions as two concatenated streams
        if len(b) > 64 and self.r.random() < 0.5:
            k = len(b) // 2
            return zlib.compress(b[:k]) + zlib.compress(b[k:])
        return zlib.compress(b)

    def log(self, versions: dict[str, int]) -> bytes:
        minor = self.minor
        new = minor >= 41
        start, end = 1_600_000_000 + self.r.randrange(1000), 1_600_000_100 + self.r.randrange(1000)
        meta = b"lib_ver=3.4.0\nh=romio_no_indep_rw=true;cb_nodes=4\n"
        if new:
            job = self.q(1000, start, 123, end, 456, 4, 42)
        else:
            job = self.q(1000, start, end, 4, 42)
        job += meta.ljust(1024, b"\0")
        job += b"/bin/app --arg x\nlustre\t/scratch\nnfs\t/home\next4\t/\nnfs\t/hom2\0"
        job = job.ljust(4096 if self.r.random() < 0.5 else len(job) + 3, b"\0")
        names = b""
        for i, rid in enumerate(self.ids):
            path = self.r.choice([b"/scratch/a/f%d" % i, b"/home/u/g%d" % i, b"/hom2", b"<STDOUT>"])
            if minor == 0:
                names += self.Q(rid) + struct.pack(self.e + "I", len(path)) + path
            else:
                names += self.Q(rid) + path + b"\0"
        regions: dict[int, bytes] = {}
        fmods = file_modules(minor)
        for mod, ver in versions.items():
            n = self.r.randrange(0, 5)
            if mod == "LUSTRE":
                body = b"".join(self.lustre(ver) for _ in range(n))
            elif mod.startswith("DXT"):
                body = b"".join(self.dxt() for _ in range(n))
            else:
                body = b"".join(self.record(mod, ver) for _ in range(n))
            regions[fmods.index(mod)] = body
        nmods = 64 if new else 16
        hdr_size = 1328 if new else 360
        blobs = [self.compress(job), self.compress(names)] + [
            self.compress(regions[i]) for i in sorted(regions)
        ]
        off = hdr_size
        offs = []
        for b in blobs:
            offs.append((off, len(b)))
            off += len(b)
        mod_map = [(0, 0)] * nmods
        mod_ver = [0] * nmods
        for k, i in enumerate(sorted(regions)):
            mod_map[i] = offs[2 + k]
            mod_ver[i] = versions[fmods[i]]
        partial = self.r.getrandbits(nmods) & sum(1 << i for i in regions)
        head = b"3.%02d" % minor
        head = head.ljust(8, b"\0") + self.q(6567223) + bytes([self.comp])
        if new:
            head += bytes(7) + struct.pack("<Q", partial)
        else:
            head += bytes(3) + struct.pack("<I", partial)
        head += self.Q(*offs[1]) + b"".join(self.Q(*m) for m in mod_map)
        head += struct.pack(self.e + f"{nmods}I", *mod_ver)
        assert len(head) == hdr_size
        return head + b"".join(blobs)


def combos() -> list[tuple]:
    """(minor, big, comp, versions, seed) of every combination the differential test decodes."""
    mods = {
        "POSIX": [1, 2, 3, 4],
        "MPI-IO": [1, 2, 3],
        "STDIO": [1, 2],
        "H5F": [1, 2, 3],
        "H5D": [1, 2],
        "PNETCDF_FILE": [1, 2, 3],
        "PNETCDF_VAR": [1],
        "LUSTRE": [1, 2],
        "DXT_POSIX": [1],
        "DXT_MPIIO": [1, 2],
        "DFS": [1],
        "DAOS": [1],
    }
    out = []
    seed = 0
    for minor in (0, 10, 20, 21, 41):
        avail = file_modules(minor)
        for big in (False, True):
            for vi in range(8):
                versions = {}
                for m, vs in mods.items():
                    if m in avail:
                        versions[m] = vs[min(vi % 4, len(vs) - 1)]
                seed += 1
                out.append((minor, big, 2 if (seed % 5 == 0) else 0, versions, seed))
    return out


def reference_decode(path: str):
    """The log at `path` decoded by libdarshan-util (the pydarshan decoder): the reference."""
    from readers import pydarshan_decoder as pdd
    from readers.darshan_header import HeaderFacts

    b = pdd._backend()
    log = b.log_open(path)
    assert log["handle"] != b.ffi.NULL
    try:
        return pdd._decode_open_log(b, log, HeaderFacts(format_version="?", compression="?"))
    finally:
        b.log_close(log)


def assert_same_table(a: pa.Table, b: pa.Table, where: str) -> None:
    """Equal schemas, rows and values; floats bit for bit."""
    assert a.schema == b.schema, where
    assert a.num_rows == b.num_rows, f"{where}: rows {a.num_rows} vs {b.num_rows}"
    for name in a.column_names:
        x, y = a.column(name), b.column(name)
        if pa.types.is_floating(x.type):
            xa = x.to_numpy(zero_copy_only=False).view(np.int64)
            ya = y.to_numpy(zero_copy_only=False).view(np.int64)
            assert xa.tolist() == ya.tolist(), f"{where}.{name}"
        else:
            assert x.equals(y), f"{where}.{name}: {x.to_pylist()[:4]} vs {y.to_pylist()[:4]}"
