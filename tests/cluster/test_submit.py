"""The spark-submit command of `cluster/standalone.sh`: what it adds for a lake on an object store."""

from __future__ import annotations

from pathlib import Path


def _submit(tmp_path: Path, lake: str) -> tuple[list[str], dict[str, str]]:
    from cluster.standalone import Standalone, submit_command

    cmd = submit_command(
        Standalone(tmp_path), tmp_path / "app.tar.gz", tmp_path / "conf", [], lake, "1g", "1g"
    )
    confs = dict(cmd[i + 1].split("=", 1) for i, a in enumerate(cmd) if a == "--conf")
    return cmd, confs


def test_an_s3_lake_adds_the_s3a_connector_and_the_endpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9999")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "never-on-the-command-line")
    cmd, confs = _submit(tmp_path, "s3://bucket/lake")
    packages = cmd[cmd.index("--packages") + 1].split(",")
    assert any(p.startswith("io.delta:delta-spark") for p in packages)
    assert any(p.startswith("org.apache.hadoop:hadoop-aws:") for p in packages)
    assert confs["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert confs["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9999"
    assert confs["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert "never-on-the-command-line" not in " ".join(cmd)  # credentials stay in the environment


def test_a_lake_folder_adds_no_object_store_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9999")
    cmd, confs = _submit(tmp_path, str(tmp_path / "lake"))
    assert "hadoop-aws" not in cmd[cmd.index("--packages") + 1]
    assert not any("s3" in k for k in confs)
