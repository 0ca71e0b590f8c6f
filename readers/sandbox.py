"""Decode traces in a child process, so a decoder that crashes, hangs or balloons costs one log.

`SandboxedDecoder.decode(path)` sends the path to a long-lived worker (`python -m
readers.sandbox`) and reads back the tables as Arrow IPC. If the worker dies (a segfault in
libdarshan-util), exceeds its address-space cap or its time limit, the log gets a
`DecoderCrash`/`ResourceLimit` reason, the worker is restarted, and the caller goes on.

Wire format, worker -> parent, per request: an 8-byte little-endian length then a JSON header
({"ok": true, "meta": {...}, "tables": [[name, nbytes], ...]} or {"ok": false, "kind", "reason"}),
then each table's IPC stream bytes in order.
"""

from __future__ import annotations

import io
import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import time

import pyarrow as pa

from readers.base import Decoded, DecodeError, DecoderCrash, ResourceLimit

ERRORS = {cls.kind: cls for cls in (DecodeError, DecoderCrash, ResourceLimit)}


def _decoder_fn(name: str):
    if name == "pydarshan":
        from readers.pydarshan_decoder import decode
    elif name == "native":
        from readers.native_darshan import decode
    else:
        raise ValueError(f"unknown decoder {name!r}")
    return decode


def decode_in_process(path: str, decoder: str) -> Decoded:
    return _decoder_fn(decoder)(path)


class SandboxedDecoder:
    def __init__(self, decoder: str, timeout_s: float = 120.0, memory_mb: int = 4096):
        self.decoder = decoder
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.proc: subprocess.Popen | None = None
        self.restarts = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "readers.sandbox", self.decoder, str(self.memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()
            self.proc = None

    def _kill(self) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        rc = proc.wait()
        self.restarts += 1
        return rc

    def decode(self, path: str) -> Decoded:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        deadline = time.monotonic() + self.timeout_s
        try:
            self.proc.stdin.write(path.encode() + b"\n")
            self.proc.stdin.flush()
            (n,) = struct.unpack("<Q", self._read(8, deadline))
            header = json.loads(self._read(n, deadline))
            if not header["ok"]:
                raise ERRORS.get(header["kind"], DecodeError)(header["reason"])
            tables = {}
            for name, nbytes in header["tables"]:
                tables[name] = pa.ipc.open_stream(self._read(nbytes, deadline)).read_all()
            return Decoded(tables=tables, **header["meta"])
        except TimeoutError:
            self._kill()
            raise ResourceLimit(
                f"decoder timeout: no result after {self.timeout_s:.0f} s"
            ) from None
        except (EOFError, BrokenPipeError):
            rc = self._kill()
            if rc is not None and rc < 0:
                sig = signal.Signals(-rc).name
                raise DecoderCrash(
                    f"decoder crash: {self.decoder} worker killed by {sig}"
                ) from None
            raise DecoderCrash(
                f"decoder crash: {self.decoder} worker exited with status {rc}"
            ) from None

    def _read(self, n: int, deadline: float) -> bytes:
        buf = io.BytesIO()
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while buf.tell() < n:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(timeout=left):
                    raise TimeoutError
                chunk = os.read(fd, min(n - buf.tell(), 1 << 20))
                if not chunk:
                    raise EOFError
                buf.write(chunk)
        return buf.getvalue()


def _serve(decoder: str, memory_mb: int) -> None:
    import resource

    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out = sys.stdout.buffer
    decode = _decoder_fn(decoder)
    for line in sys.stdin.buffer:
        path = line.rstrip(b"\n").decode()
        blobs: list[bytes] = []
        try:
            d = decode(path)
            names = []
            # a streamed table is sent whole: the worker's memory cap bounds it (ingest streams
            # huge DXT traces only when decoding in process)
            for name, t in d.all_tables().items():
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, t.schema) as w:
                    w.write_table(t)
                blobs.append(sink.getvalue().to_pybytes())
                names.append([name, len(blobs[-1])])
            meta = {
                k: getattr(d, k)
                for k in (
                    "format",
                    "format_version",
                    "writer_version",
                    "compression",
                    "decoder",
                    "modules",
                    "partial_modules",
                    "modules_info",
                    "notes",
                    "damaged",
                )
            }
            header = {"ok": True, "meta": meta, "tables": names}
        except MemoryError:
            header = {
                "ok": False,
                "kind": "limit",
                "reason": f"decoder exceeded its {memory_mb} MiB memory cap",
            }
            blobs = []
        except DecodeError as e:
            header = {
                "ok": False,
                "kind": e.kind if e.kind in ERRORS else "corrupt",
                "reason": str(e),
            }
            blobs = []
        except Exception as e:  # a decoder bug is still this log's problem, not the stage's
            header = {
                "ok": False,
                "kind": "corrupt",
                "reason": f"decoder error: {type(e).__name__}: {e}",
            }
            blobs = []
        h = json.dumps(header).encode()
        out.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            out.write(b)
        out.flush()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]))
