"""`decode_darshan`: one entry point for Darshan logs, dispatching to a decoder.

`decoder="native"` (default) is the Rust decoder `readers.native_darshan` (in-process,
memory-safe, reads zlib/bzip2/none and big-endian logs); `decoder="pydarshan"` is the
reference `readers.pydarshan_decoder` (libdarshan-util via cffi; needs a path, and should run
in a sandbox process on untrusted input).
"""

from __future__ import annotations

import os
import tempfile

import pyarrow as pa

DECODERS = ("native", "pydarshan")


def decode_darshan(path_or_bytes, decoder: str = "native") -> dict[str, pa.Table]:
    """The bronze tables of one Darshan log, from its path or its bytes."""
    if decoder == "native":
        from readers import native_darshan

        return native_darshan.decode(path_or_bytes).all_tables()
    if decoder == "pydarshan":
        from readers import pydarshan_decoder

        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            # libdarshan-util only opens files
            with tempfile.NamedTemporaryFile(suffix=".darshan", delete=False) as fh:
                fh.write(bytes(path_or_bytes))
            try:
                return pydarshan_decoder.decode(fh.name).tables
            finally:
                os.unlink(fh.name)
        return pydarshan_decoder.decode(os.fspath(path_or_bytes)).tables
    raise ValueError(f"unknown decoder {decoder!r}; expected one of {DECODERS}")
