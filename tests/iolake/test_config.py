import pytest

from iolake.config import CONF_DIR, ConfigError, load_config


def _conf_dir(tmp_path, local_text: str):
    (tmp_path / "base.yaml").write_text((CONF_DIR / "base.yaml").read_text())
    (tmp_path / "local.yaml").write_text(local_text)
    return tmp_path


def test_config_overlay_merges_key_by_key(tmp_path):
    d = _conf_dir(tmp_path, "ingest:\n  decoder: native\nspark:\n  properties:\n    spark.x: '1'\n")
    conf = load_config("local", d)
    assert conf.ingest.decoder == "native"
    # keys the overlay does not mention keep their base values
    assert conf.ingest.task_bytes == 67108864
    assert conf.spark.properties["spark.x"] == "1"
    assert conf.spark.properties["spark.sql.session.timeZone"] == "UTC"


def test_config_unknown_key_names_file_and_key(tmp_path):
    d = _conf_dir(tmp_path, "ingest:\n  decodr: native\n")
    with pytest.raises(ConfigError) as e:
        load_config("local", d)
    assert str(d / "local.yaml") in str(e.value)
    assert "ingest.decodr" in str(e.value)


def test_config_wrong_type_names_file_and_key(tmp_path):
    d = _conf_dir(tmp_path, "gates:\n  enabled: maybe\n")
    with pytest.raises(ConfigError, match=r"local.yaml: gates.enabled: expected true or false"):
        load_config("local", d)


def test_config_bad_choice_is_refused(tmp_path):
    d = _conf_dir(tmp_path, "ingest:\n  decoder: magic\n")
    with pytest.raises(ConfigError, match="ingest.decoder: must be one of pydarshan, native"):
        load_config("local", d)


def test_config_unknown_env_is_refused():
    with pytest.raises(ConfigError, match="--env"):
        load_config("staging")


def test_config_overrides_from_command_line_win():
    conf = load_config("local", overrides={"lake": {"root": "/tmp/x"}})
    assert conf.lake.root == "/tmp/x"
    assert conf.digest() != load_config("local").digest()


def test_pipeline_lists_ingest_first_and_checks_dependencies(tmp_path):
    from iolake.pipeline import load_pipeline

    stages = load_pipeline()
    assert stages[0].name == "ingest" and stages[0].available
    bad = tmp_path / "p.yaml"
    bad.write_text("stages:\n  - name: a\n    module: m\n    depends_on: [b]\n")
    with pytest.raises(ConfigError, match="depends_on 'b' is not an earlier stage"):
        load_pipeline(bad)


def test_unknown_key_in_base_is_blamed_on_base_even_when_the_overlay_sets_its_section(tmp_path):
    (tmp_path / "base.yaml").write_text("lake: x\ningest:\n  decodr: native\n")
    (tmp_path / "cluster.yaml").write_text("ingest:\n  task_bytes: 1024\n")
    with pytest.raises(ConfigError) as e:
        load_config("cluster", tmp_path)
    assert str(e.value).startswith(f"{tmp_path / 'base.yaml'}: ingest.decodr: unknown key")
