"""One writer at a time on an S3 lake: a lease object taken and renewed with S3 conditional writes.

Why: delta-spark 4.4 commits to S3 through `S3SingleDriverLogStore`, which serialises commits
inside one Spark driver but cannot stop two drivers from writing the same commit file
(`_delta_log/NNN.json`), as S3A has no put-if-absent: the Delta docs' S3 section says concurrent
writes must come from one driver. Two nightly runs that overlap, or a manual `iolake stage` beside
the scheduled run, are two drivers. So every writing command on an S3 lake (`iolake run`,
`iolake stage`, `iolake maintain`) first holds the lake's lease:

- `LAKE/_lock/writer.json` is created with `If-None-Match: *` (S3 conditional writes, on AWS since
  2024 and on S3-compatible servers that implement them): of two runs, exactly one creates it;
- the holder rewrites it every `lock_ttl_s / 3` with `If-Match: <its ETag>` (a heartbeat);
- a run that finds the lease waits, up to `lake.lock_wait_s`, then fails naming the holder (run
  id, host, pid, since when);
- a lease not renewed for `lake.lock_ttl_s` (by the server's clock: the object's Last-Modified
  against the response's Date; both are HTTP dates in whole seconds, so the age read can exceed
  the true age by up to a second and a lease counts as expired only past the TTL plus that
  second, `CLOCK_STEP_S`) belongs to a run that died (kill -9, a lost node): the next run
  takes it over with `If-Match: <the stale ETag>`, so of two runs taking over, one wins. A killed
  run therefore delays the next by at most the TTL and never leaves the lake stuck;
- a holder whose heartbeat finds the lease taken over (it stalled past the TTL) stops at the next
  stage boundary (`LeaseLost`) rather than commit beside the new holder;
- a run whose conditional write succeeded reads the lease back `SETTLE_S` later and holds it only
  if it reads its own write: a server that checks a condition and then writes (S3Proxy does, and
  other S3-compatible stores may) can answer 200 to two runs creating or taking over the lease in
  the same instant. The last write stands, its writer holds the lease, the others go on waiting.

A local lake needs none of this: Delta's local LogStore creates commit files with an atomic
rename, so concurrent runs are safe there and are not serialised.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from email.utils import parsedate_to_datetime
from urllib.parse import urlparse

from iolake.lake import objectstore

LOCK_KEY = "_lock/writer.json"
# Last-Modified and Date are HTTP dates (RFC 9110 section 5.6.7), in whole seconds: their
# difference can overstate a lease's age by up to this much.
CLOCK_STEP_S = 1.0
# How long a run that wrote the lease waits before reading it back: longer than a server takes
# between checking a conditional write's precondition and storing the object.
SETTLE_S = 1.0


class LakeBusy(RuntimeError):
    """Another run holds the lake's writer lease and renewed it; waited `lake.lock_wait_s`."""


class StoreUnavailable(RuntimeError):
    """The object store holding the lake cannot be reached or refused the credentials."""


REFUSED_CODES = (
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "NoSuchBucket",
    "403",
)


class LeaseLost(RuntimeError):
    """This run's lease was taken over by another run after it stalled past `lake.lock_ttl_s`."""


def _client():
    import boto3
    from botocore.config import Config

    url = objectstore.endpoint()
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    cfg = Config(
        s3={"addressing_style": "path" if url else "auto"},
        retries={"max_attempts": 3, "mode": "standard"},
    )
    # a session of its own: boto3's default one caches the credentials it first found
    return boto3.session.Session().client("s3", endpoint_url=url, region_name=region, config=cfg)


def _bucket_key(lake: str) -> tuple[str, str]:
    u = urlparse(lake)
    prefix = u.path.strip("/")
    return u.netloc, f"{prefix}/{LOCK_KEY}" if prefix else LOCK_KEY


def _code(err) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def _refused(err) -> bool:
    """A conditional write that lost: 412 Precondition Failed, or 409 while another write of the
    same key is in flight (S3's ConditionalRequestConflict)."""
    status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status in (409, 412) or _code(err) in (
        "PreconditionFailed",
        "ConditionalRequestConflict",
    )


class WriterLease:
    """The writer lease of the S3 lake `lake`; use `with WriterLease(...):` or `hold(conf, ...)`."""

    def __init__(self, lake: str, run_id: str, ttl_s: float, wait_s: float, echo=print):
        self.lake, self.run_id, self.ttl_s, self.wait_s, self.echo = (
            lake,
            run_id,
            ttl_s,
            wait_s,
            echo,
        )
        self.bucket, self.key = _bucket_key(lake)
        self.s3 = _client()
        self.etag: str | None = None
        self.lost = False
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def _body(self) -> bytes:
        return json.dumps(
            {
                "run_id": self.run_id,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "renewed_at_local": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        ).encode()

    def _put(self, **cond) -> str:
        r = self.s3.put_object(
            Bucket=self.bucket,
            Key=self.key,
            Body=self._body(),
            ContentType="application/json",
            **cond,
        )
        return r["ETag"]

    def _holder(self) -> tuple[str, float, dict] | None:
        """(ETag, seconds since the holder last renewed by the server's clock, holder) or None."""
        from botocore.exceptions import ClientError

        try:
            r = self.s3.get_object(Bucket=self.bucket, Key=self.key)
        except ClientError as e:
            if _code(e) in ("NoSuchKey", "404"):
                return None
            raise
        try:
            holder = json.loads(r["Body"].read())
        except ValueError:
            holder = {}
        now = parsedate_to_datetime(r["ResponseMetadata"]["HTTPHeaders"]["date"])
        return r["ETag"], (now - r["LastModified"]).total_seconds(), holder

    def _write(self) -> tuple[str, tuple | None]:
        """One try at the lease: ("wrote", None) when this run created it, ("wrote", (age,
        holder)) when it took a dead holder's over, ("busy", (age, holder)) when a live holder
        has it, ("again", None) when it changed under us (released, or taken over first)."""
        from botocore.exceptions import ClientError

        try:
            self.etag = self._put(IfNoneMatch="*")
            return "wrote", None
        except ClientError as e:
            if not _refused(e):
                raise
        held = self._holder()
        if held is None:
            return "again", None  # released between our write and our read
        etag, age, holder = held
        if age <= self.ttl_s + CLOCK_STEP_S:
            return "busy", (age, holder)
        try:
            self.etag = self._put(IfMatch=etag)
        except ClientError as e:
            if not _refused(e):
                raise
            return "again", None  # another run took it over first
        return "wrote", (age, holder)

    def _confirmed(self) -> bool:
        """Whether the lease read back `SETTLE_S` after our write is still our write."""
        time.sleep(SETTLE_S)
        held = self._holder()
        return held is not None and held[0] == self.etag

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_s
        told = False
        while True:
            outcome, found = self._write()
            if outcome == "wrote":
                if self._confirmed():
                    if found is not None:
                        age, holder = found
                        self.echo(
                            f"[lock] took over the writer lease of run "
                            f"{holder.get('run_id', '?')} (host {holder.get('host', '?')}, pid "
                            f"{holder.get('pid', '?')}), not renewed for {age:.0f} s > "
                            f"lake.lock_ttl_s {self.ttl_s:g} s"
                        )
                    break
                self.etag = None  # another run's write of the same instant came last: it holds
                continue
            if outcome == "again":
                continue
            age, holder = found
            who = (
                f"run {holder.get('run_id', '?')} (host {holder.get('host', '?')}, "
                f"pid {holder.get('pid', '?')}, renewed {age:.0f} s ago)"
            )
            if time.monotonic() >= deadline:
                raise LakeBusy(
                    f"the lake {self.lake} is being written by {who}; waited "
                    f"lake.lock_wait_s = {self.wait_s:g} s. One writer at a time on an S3 lake "
                    f"(s3://{self.bucket}/{self.key}); a dead holder's lease expires after "
                    f"lake.lock_ttl_s = {self.ttl_s:g} s"
                )
            if not told:
                self.echo(f"[lock] waiting for {who} to finish writing {self.lake}")
                told = True
            time.sleep(min(5.0, max(0.2, self.ttl_s / 4)))
        self._beat = threading.Thread(target=self._heartbeat, name="iolake-lease", daemon=True)
        self._beat.start()

    def renew(self) -> bool:
        """Rewrite the lease if this run still holds it; False (and `lost`) when another run took
        it over. A network error propagates: the next beat tries again within the TTL."""
        from botocore.exceptions import ClientError

        try:
            self.etag = self._put(IfMatch=self.etag)
            return True
        except ClientError as e:
            if not (_refused(e) or _code(e) in ("NoSuchKey", "404")):  # gone: released by another
                raise
            self.lost = True
            self.echo(f"[lock] the writer lease of {self.lake} was taken over by another run")
            return False

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            try:
                if not self.renew():
                    return
            except Exception:  # a network blip: the next beat tries again within the TTL
                continue

    def check(self) -> None:
        """Raise LeaseLost when another run has taken the lease over."""
        if self.lost:
            raise LeaseLost(
                f"run {self.run_id} lost the writer lease of {self.lake}: it was not renewed for "
                f"lake.lock_ttl_s = {self.ttl_s:g} s and another run took it over; stopping "
                "before the next stage so that the two runs never commit side by side"
            )

    def release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=10)
        if self.lost or self.etag is None:
            return
        with contextlib.suppress(Exception):
            held = self._holder()
            if held is not None and held[0] == self.etag:
                self.s3.delete_object(Bucket=self.bucket, Key=self.key)
        self.etag = None

    def __enter__(self):
        from botocore.exceptions import BotoCoreError, ClientError

        where = f"the object store at {objectstore.endpoint() or 'AWS S3'} holding {self.lake}"
        try:
            self.acquire()
        except ClientError as e:
            if _code(e) not in REFUSED_CODES:
                raise
            raise StoreUnavailable(
                f"{where} refused this run ({_code(e)}: {e.response['Error'].get('Message', '')}): "
                "check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the instance role) and that "
                f"bucket {self.bucket} exists"
            ) from None
        except BotoCoreError as e:
            raise StoreUnavailable(f"{where} cannot be reached: {e}") from None
        return self

    def __exit__(self, *exc):
        self.release()
        return False


@contextlib.contextmanager
def hold(conf, run_id: str, echo=print):
    """The writer lease of `conf`'s lake while the block runs; None (no lease) for a lake that is
    not on S3."""
    if not objectstore.is_s3(conf.lake.root):
        yield None
        return
    lease = WriterLease(conf.lake.root, run_id, conf.lake.lock_ttl_s, conf.lake.lock_wait_s, echo)
    with lease:
        yield lease
