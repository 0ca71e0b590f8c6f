"""Facts read straight from a Darshan log's first bytes, before any decoder touches it.

Darshan 3.x logs start with an uncompressed header: an 8-byte version string ("3.41"), the
int64 magic number 0xdefaced and a one-byte compression type (0 zlib, 1 bzip2, 2 none);
darshan-log-format.h. Darshan 1.x/2.x logs are gzip streams of a different layout.
Peeking first lets ingest quarantine unsupported files with a precise reason instead of
handing them to a C library.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from readers.base import DecodeError, UnsupportedFormat

DARSHAN_MAGIC = 6567223  # DARSHAN_MAGIC_NR
COMPRESSION = {0: "zlib", 1: "bzip2", 2: "none"}
HEADER_PREFIX = 17  # version string (8) + magic (8) + comp_type (1)


@dataclass(frozen=True)
class HeaderFacts:
    format_version: str
    compression: str
    big_endian: bool = False


def peek_header(head: bytes) -> HeaderFacts:
    """Classify a trace from its first bytes, or raise the quarantine reason."""
    if head[:2] == b"\x1f\x8b":
        raise UnsupportedFormat("unsupported format 2.x (gzip-compressed Darshan 1.x/2.x log)")
    if len(head) < HEADER_PREFIX:
        raise DecodeError(f"truncated header: {len(head)} bytes, need {HEADER_PREFIX}")
    version = head[:8].split(b"\x00", 1)[0].decode("ascii", errors="replace")
    (magic,) = struct.unpack("<q", head[8:16])
    (magic_be,) = struct.unpack(">q", head[8:16])
    if DARSHAN_MAGIC not in (magic, magic_be):  # big-endian logs are byte-swapped on read
        if version.startswith("2.") or version.startswith("1."):
            raise UnsupportedFormat(f"unsupported format {version[:1]}.x")
        raise DecodeError(f"not a Darshan log: bad magic number {magic:#x}")
    if not version.startswith("3."):
        raise UnsupportedFormat(f"unsupported format {version!r}")
    comp = COMPRESSION.get(head[16])
    if comp is None:
        raise DecodeError(f"unknown compression type {head[16]}")
    return HeaderFacts(format_version=version, compression=comp, big_endian=magic != DARSHAN_MAGIC)
