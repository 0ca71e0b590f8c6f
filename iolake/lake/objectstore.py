"""A lake on S3 or an S3-compatible object store: the settings each client of the lake needs.

Three clients reach the lake, each with its own S3 code:
- Spark (Delta, every stage's reads and commits) through Hadoop's S3A connector, which is not in
  pyspark's `jars/`: `HADOOP_AWS` is added to the session's packages, the `s3://` scheme is mapped
  to S3A, and an endpoint named by `AWS_ENDPOINT_URL` (an S3-compatible server) becomes
  `fs.s3a.endpoint` with path-style requests;
- pyarrow.fs (ingest's listing, hashing, reading and staged Parquet; `readers/fsio.py`), which
  reads `AWS_ENDPOINT_URL`, the credentials and the region from the environment itself;
- delta-rs (`iolake report`, `IOFrame.from_lake`, DuckDB examples; `iolake/lake/arrow.py`),
  which reads them from the environment too but refuses plain HTTP unless `AWS_ALLOW_HTTP` says so.

Credentials come from the environment or the instance's role for all three (S3A's default
provider chain reads `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` like boto3 and pyarrow), never
from the configuration files. Under `spark-submit` the packages and `spark.hadoop.fs.s3a.*` are the
submitter's to set (docs/running-at-a-centre.md).

Delta on S3 (delta-spark 4.4): commits go through `S3SingleDriverLogStore`, which makes concurrent
commits safe only from one Spark driver, because S3A has no put-if-absent. iolake therefore runs one
writer per S3 lake at a time: `iolake/lake/lock.py`.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.5.0"  # the Hadoop of pyspark 4.2's jars/
S3_SCHEMES = ("s3", "s3a")


def is_s3(uri: str) -> bool:
    """True for an `s3://` or `s3a://` URI."""
    return urlparse(str(uri)).scheme in S3_SCHEMES


def endpoint() -> str | None:
    """The S3-compatible endpoint named by the environment (AWS SDKs' own variables), or None: AWS."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def spark_properties() -> dict[str, str]:
    """Spark settings that let Delta read and commit `s3://` and `s3a://` tables."""
    props = {
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        # Delta picks its LogStore by scheme; s3:// mapped to S3A needs S3A's single-driver store
        "spark.delta.logStore.s3.impl": "io.delta.storage.S3SingleDriverLogStore",
    }
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        props["spark.hadoop.fs.s3a.endpoint.region"] = region
    url = endpoint()
    if url:
        parsed = urlparse(url)
        props["spark.hadoop.fs.s3a.endpoint"] = url
        props["spark.hadoop.fs.s3a.path.style.access"] = "true"
        props["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(parsed.scheme == "https").lower()
    return props


def storage_options(uri: str) -> dict[str, str] | None:
    """delta-rs options for reading `uri`: None when the environment says all (AWS, or not S3)."""
    url = endpoint()
    if not is_s3(uri) or not url:
        return None
    opts = {"AWS_ENDPOINT_URL": url}
    if urlparse(url).scheme == "http":
        opts["AWS_ALLOW_HTTP"] = "true"
    return opts


def delta_rs_uri(uri: str) -> str:
    """delta-rs knows `s3://`; `s3a://` (Spark's name) is the same object."""
    return "s3://" + uri[len("s3a://") :] if uri.startswith("s3a://") else uri
