"""iolake/config.py: conf/base.yaml holds every default; an overlay changes keys; errors name the file and key."""

import ast
from pathlib import Path

import pytest
import yaml

from iolake.config import CONF_DIR, ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((CONF_DIR / "base.yaml").read_text())  # plain YAML, not the loader under test


def _conf_dir(tmp_path, local_text: str = "", base_edit=None, cluster_text: str | None = None):
    """A conf folder: the real base.yaml (optionally edited line by line) and the given overlays."""
    base = (CONF_DIR / "base.yaml").read_text()
    if base_edit:
        base = base_edit(base)
    (tmp_path / "base.yaml").write_text(base)
    (tmp_path / "local.yaml").write_text(local_text)
    if cluster_text is not None:
        (tmp_path / "cluster.yaml").write_text(cluster_text)
    return tmp_path


def test_config_base_yaml_gives_every_value():
    conf = load_config("local")
    assert conf.ingest.task_bytes == BASE["ingest"]["task_bytes"]
    assert conf.lake.commit_retries == BASE["lake"]["commit_retries"]
    assert conf.lake.retry_backoff_s == BASE["lake"]["retry_backoff_s"]
    assert conf.tags.small_bytes == BASE["tags"]["small_bytes"]
    assert conf.models.alias == BASE["models"]["alias"]


def test_safe_load_reads_every_shipped_yaml_as_pyyaml_does(tmp_path):
    from iolake.config import safe_load

    shipped = [*sorted(CONF_DIR.glob("*.yaml")), CONF_DIR.parent / "pipeline.yaml"]
    assert len(shipped) >= 4
    for path in shipped:
        assert safe_load(path.read_text()) == yaml.safe_load(path.read_text()), path
    d = _conf_dir(tmp_path, "ingest: [decoder: native\n")
    with pytest.raises(ConfigError, match=r"(?s)local\.yaml: not valid YAML.*line 1, column 9"):
        load_config("local", d)


def test_config_overlay_merges_key_by_key(tmp_path):
    assert BASE["ingest"]["decoder"] != "pydarshan" and BASE["ingest"]["task_bytes"] != 4096
    d = _conf_dir(
        tmp_path,
        "ingest:\n  decoder: pydarshan\n  task_bytes: 4096\n"
        "spark:\n  properties:\n    spark.x: '1'\n",
    )
    conf = load_config("local", d)
    # the overlay's values replace base.yaml's ...
    assert conf.ingest.decoder == "pydarshan"
    assert conf.ingest.task_bytes == 4096
    assert conf.spark.properties["spark.x"] == "1"
    # ... and keys it does not mention keep them, in the same section and in nested mappings
    assert conf.ingest.task_max_logs == BASE["ingest"]["task_max_logs"]
    assert conf.ingest.suffixes == BASE["ingest"]["suffixes"]
    assert (
        conf.spark.properties["spark.sql.session.timeZone"]
        == BASE["spark"]["properties"]["spark.sql.session.timeZone"]
    )


def test_config_unknown_key_names_file_and_key(tmp_path):
    d = _conf_dir(tmp_path, "ingest:\n  decodr: native\n")
    with pytest.raises(ConfigError) as e:
        load_config("local", d)
    assert str(e.value).startswith(f"{d / 'local.yaml'}: ingest.decodr: unknown key")


def test_config_ingest_commit_retries_moved_to_lake(tmp_path):
    d = _conf_dir(tmp_path, "ingest:\n  commit_retries: 3\n")
    with pytest.raises(ConfigError) as e:
        load_config("local", d)
    assert str(e.value).startswith(f"{d / 'local.yaml'}: ingest.commit_retries: unknown key")
    assert (
        load_config(
            "local", _conf_dir(tmp_path, "lake:\n  commit_retries: 3\n")
        ).lake.commit_retries
        == 3
    )


def test_config_glr_that_can_never_alarm_names_file_and_key(tmp_path):
    d = _conf_dir(tmp_path, "watch:\n  short_window: 4\n  glr:\n    h: 4.5\n")
    with pytest.raises(ConfigError) as e:
        load_config("local", d)
    # clip 2 (base.yaml) * sqrt(4) = 4.0: no window can reach -4.5
    assert str(e.value).startswith(f"{d / 'local.yaml'}: watch.glr.h: glr can never alarm")
    assert (
        load_config("local", _conf_dir(tmp_path, "watch:\n  glr:\n    h: 4.0\n")).watch.glr.h == 4.0
    )


def test_config_wrong_type_names_file_and_key(tmp_path):
    d = _conf_dir(tmp_path, "gates:\n  enabled: maybe\n")
    with pytest.raises(ConfigError, match=r"local.yaml: gates.enabled: expected true or false"):
        load_config("local", d)


@pytest.mark.parametrize("env", ["local", "cluster"])
def test_config_overlay_wrong_type_names_the_overlay(tmp_path, env):
    text = "lake:\n  commit_retries: many\n"
    d = _conf_dir(
        tmp_path, text if env == "local" else "", cluster_text=text if env == "cluster" else ""
    )
    with pytest.raises(ConfigError) as e:
        load_config(env, d)
    assert (
        str(e.value) == f"{d / f'{env}.yaml'}: lake.commit_retries: expected an integer, got 'many'"
    )


def test_config_key_missing_from_base_names_base_and_key(tmp_path):
    def drop_small_bytes(text):
        lines = text.splitlines(keepends=True)
        kept = [ln for ln in lines if not ln.startswith("  small_bytes:")]
        assert len(kept) == len(lines) - 1
        return "".join(kept)

    d = _conf_dir(tmp_path, "tags:\n  small_requests: 0.2\n", base_edit=drop_small_bytes)
    with pytest.raises(ConfigError) as e:
        load_config("local", d)
    assert str(e.value).startswith(
        f"{d / 'base.yaml'}: tags.small_bytes: missing (base.yaml sets every key"
    )


def test_config_missing_key_is_not_filled_by_the_overlay_section(tmp_path):
    """A key base.yaml lacks is base.yaml's error even when the overlay sets it: overlays only change keys."""

    def drop_alias(text):
        return text.replace("  alias: champion", "", 1)

    d = _conf_dir(tmp_path, "", base_edit=drop_alias)
    with pytest.raises(ConfigError, match=r"base.yaml: models.alias: missing"):
        load_config("local", d)


def test_config_bad_choice_is_refused(tmp_path):
    d = _conf_dir(tmp_path, "ingest:\n  decoder: magic\n")
    with pytest.raises(ConfigError, match="ingest.decoder: must be one of pydarshan, native"):
        load_config("local", d)


def test_config_unknown_env_is_refused():
    with pytest.raises(ConfigError, match="--env"):
        load_config("staging")


def test_config_lake_override_wins_over_base_and_overlay(tmp_path):
    """`--lake X` is the override {"lake": {"root": X}}: it beats cluster.yaml's lake.root and
    leaves the other lake keys at base.yaml's values."""
    cluster_root = yaml.safe_load((CONF_DIR / "cluster.yaml").read_text())["lake"]["root"]
    assert cluster_root != BASE["lake"]["root"]
    assert load_config("cluster").lake.root == cluster_root
    conf = load_config("cluster", overrides={"lake": {"root": str(tmp_path / "x")}})
    assert conf.lake.root == str(tmp_path / "x")
    assert conf.lake.commit_retries == BASE["lake"]["commit_retries"]
    assert conf.digest() != load_config("cluster").digest()


def test_config_model_digest_follows_what_models_learn_not_how_they_run(tmp_path):
    """A heap, a lake path, cv_jobs or retrain_growth leave the model digest (train's key) as it
    was, while the whole digest changes; a feature rule, a seed, the application key (the splits'
    groups) or a site tier change it."""
    base = load_config("local")
    same = {
        "spark": {"properties": {"spark.driver.memory": "9g"}},
        "lake": {"root": str(tmp_path / "elsewhere")},
        "models": {"cv_jobs": base.models.cv_jobs + 3, "retrain_growth": 0.5},
        "watch": {"short_window": base.watch.short_window + 1},
    }
    for section, change in same.items():
        conf = load_config("local", overrides={section: change})
        assert conf.digest() != base.digest(), section
        assert conf.model_digest() == base.model_digest(), section
    differ = {
        "models": {"seed": base.models.seed + 1},
        "features": {"random_fraction": base.features.random_fraction / 2},
        "suspect": {"max_counter": base.suspect.max_counter // 2},
        "watch": {"nprocs_buckets": [1, 1024]},
    }
    for section, change in differ.items():
        conf = load_config("local", overrides={section: change})
        assert conf.model_digest() != base.model_digest(), section
    site = tmp_path / "site"
    site.mkdir()
    _conf_dir(site, "site:\n  name: other\n  tiers:\n    - {name: pfs, kind: parallel_fs}\n")
    assert load_config("local", site).model_digest() != base.model_digest()


def test_config_lake_override_of_the_cli(tmp_path):
    from iolake.cli import _conf, parser

    args = parser().parse_args(["ingest", "in", "--env", "cluster", "--lake", str(tmp_path / "l")])
    assert _conf(args).lake.root == str(tmp_path / "l")


def test_config_cli_without_lake_keeps_the_configured_root():
    from iolake.cli import _conf, parser

    cluster_root = yaml.safe_load((CONF_DIR / "cluster.yaml").read_text())["lake"]["root"]
    assert (
        _conf(parser().parse_args(["ingest", "in", "--env", "cluster"])).lake.root == cluster_root
    )


def test_pipeline_lists_ingest_first_and_checks_dependencies(tmp_path):
    from iolake.pipeline import load_pipeline

    stages = load_pipeline()
    assert stages[0].name == "ingest" and stages[0].available
    bad = tmp_path / "p.yaml"
    bad.write_text("stages:\n  - name: a\n    module: m\n    depends_on: [b]\n")
    with pytest.raises(ConfigError, match="depends_on 'b' is not an earlier stage"):
        load_pipeline(bad)


def test_unknown_key_in_base_is_blamed_on_base_even_when_the_overlay_sets_its_section(tmp_path):
    d = _conf_dir(
        tmp_path,
        base_edit=lambda t: t.replace("\ningest:\n", "\ningest:\n  decodr: native\n", 1),
        cluster_text="ingest:\n  task_bytes: 1024\n",
    )
    assert "  decodr: native" in (d / "base.yaml").read_text()
    with pytest.raises(ConfigError) as e:
        load_config("cluster", d)
    assert str(e.value).startswith(f"{d / 'base.yaml'}: ingest.decodr: unknown key")


# -- models.alias: the one alias promotion, scoring and predict use ---------------------------------


def _calls(path: Path, func: str):
    tree = ast.parse(path.read_text())
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (getattr(n.func, "attr", None) == func or getattr(n.func, "id", None) == func)
    ]


def _is_config_alias(node) -> bool:
    """`conf.models.alias` or `m.alias` (m = conf.models), not a literal."""
    return isinstance(node, ast.Attribute) and node.attr == "alias"


def _alias_arg(call: ast.Call, position: int):
    kw = [k.value for k in call.keywords if k.arg == "alias"]
    return kw[0] if kw else call.args[position]


def test_config_models_alias_is_the_alias_of_promotion_scoring_and_predict(tmp_path):
    assert (
        load_config("local", _conf_dir(tmp_path, "models:\n  alias: nightly\n")).models.alias
        == "nightly"
    )
    promote = _calls(ROOT / "jobs" / "train.py", "register_and_promote")
    assert len(promote) == 2  # placement and bandwidth
    assert all(_is_config_alias(_alias_arg(c, 6)) for c in promote)
    loads = _calls(ROOT / "jobs" / "score.py", "version_by_alias") + _calls(
        ROOT / "apps" / "predict.py", "load"
    )
    assert len(loads) >= 3
    assert all(_is_config_alias(_alias_arg(c, 1)) for c in loads)
    # no code (docstrings aside) names the default alias itself
    for rel in ("models/registry.py", "jobs/train.py", "jobs/score.py", "apps/predict.py"):
        tree = ast.parse((ROOT / rel).read_text())
        docs = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
        }
        literals = [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant)
            and id(n) not in docs
            and isinstance(n.value, str)
            and BASE["models"]["alias"] in n.value
        ]
        assert not literals, (rel, literals)


def test_config_alias_cannot_be_the_losers_alias():
    """A losing model version gets `challenger` (models/registry.py): the configured alias must differ."""
    with pytest.raises(
        ConfigError,
        match=r"command line: models.alias: 'challenger' is the alias a version that lost",
    ):
        load_config("local", overrides={"models": {"alias": "challenger"}})


@pytest.mark.parametrize(
    "text, key",
    [
        ("advise:\n  tier_from: oracle\n", "advise.tier_from: must be placement or bandwidth"),
        (
            "advise:\n  dimensions: [tier, stripes]\n",
            "advise.dimensions: unknown dimension 'stripes'",
        ),
        ("advise:\n  stripe_growth: triple\n", "advise.stripe_growth: must be double or linear"),
        ("advise:\n  readvise_months: -1\n", "advise.readvise_months: must be >= 0, got -1"),
    ],
)
def test_config_bad_advise_setting_names_file_and_key(tmp_path, text, key):
    d = _conf_dir(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        load_config("local", d)
    assert str(e.value).startswith(str(d / "local.yaml")) and key in str(e.value)


@pytest.mark.parametrize(
    "text, key",
    [
        (
            "suspect:\n  max_bytes_per_s_per_process: 0\n",
            "suspect.max_bytes_per_s_per_process: must be >= 1, got 0",
        ),
        ("suspect:\n  max_counter: 0\n", "suspect.max_counter: must be >= 1, got 0"),
        ("suspect:\n  time_slack_s: -1\n", "suspect.time_slack_s: must be >= 0, got -1"),
    ],
)
def test_config_bad_suspect_setting_names_file_and_key(tmp_path, text, key):
    d = _conf_dir(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        load_config("local", d)
    assert str(e.value).startswith(str(d / "local.yaml")) and key in str(e.value)


# ---- the site profile (conf `site:`) ----------------------------------------------------------
SITE = "site:\n  name: lab\n  tiers:\n"
BB = "    - {name: bb, kind: burst_buffer, mounts: [/bb/]}\n"


@pytest.mark.parametrize(
    "tiers, key",
    [
        (
            "    - {name: bb, kind: tape}\n",
            "site.tiers[0].kind: must be one of burst_buffer, parallel_fs, node_local, got 'tape'",
        ),
        (
            BB
            + "    - {name: pfs, kind: parallel_fs, stripe: 'lfs setstripe -c {count} -S {stripes}'}\n",
            "site.tiers[1].stripe: unknown placeholder {stripes}",
        ),
        (
            "    - {name: bb, kind: burst_buffer, stage: 'cp {file} {mount}/'}\n",
            "site.tiers[0].stage: uses {mount} but the tier has no mounts",
        ),
        (
            BB + "    - {name: bb, kind: node_local}\n",
            "site.tiers[1].name: tier 'bb' is named twice",
        ),
        (
            "    - {name: bb, kind: burst_buffer, mounts: [bb/]}\n",
            "site.tiers[0].mounts: 'bb/' is not an absolute path prefix",
        ),
        (
            BB + "    - {name: pfs, kind: parallel_fs, stripe: 'lfs setstripe -S {size} {dir}'}\n",
            "site.tiers[1].stripe: must use {count}",
        ),
        (
            "    - {name: bb, kind: burst_buffer, stage: 'cp {file ${DW}/'}\n",
            "site.tiers[0].stage: not a template",
        ),
        ("    - {name: bb, kind: burst_buffer, stge: 'cp'}\n", "site.tiers.stge: unknown key"),
        ("    - {kind: burst_buffer}\n", "site.tiers.name: missing"),
        ("    []\n", "site.tiers: needs at least one tier"),
    ],
)
def test_config_bad_site_profile_names_file_and_key(tmp_path, tiers, key):
    d = _conf_dir(tmp_path, SITE + tiers)
    with pytest.raises(ConfigError) as e:
        load_config("local", d)
    assert key in str(e.value)
    assert str(e.value).startswith(str(d / "local.yaml")), str(e.value)  # the file that set them


def test_config_shipped_site_profile_is_generic():
    """The default names no system's syntax (no Cray DataWarp `#DW jobdw`), and its mounts add no
    tier rule: features.tier_rules alone decide a file's tier."""
    text = (CONF_DIR / "base.yaml").read_text()
    section = text[text.index("\nsite:") :]
    for word in ("#DW", "jobdw", "DW_JOB", "datawarp"):
        assert word not in section
    conf = load_config("local")
    assert conf.site.name == BASE["site"]["name"] == "generic"
    assert [t.name for t in conf.site.tiers] == ["bb", "pfs"]
    assert all(not t.stage for t in conf.site.tiers)  # no staging command at all
    assert len(conf.features.tier_rules) == len(BASE["features"]["tier_rules"])


def test_config_site_mounts_are_tier_rules_before_the_features_rules(tmp_path):
    d = _conf_dir(
        tmp_path,
        SITE + BB + "    - {name: pfs, kind: parallel_fs, mounts: [/lus/scratch/, /lus/proj/]}\n",
    )
    conf = load_config("local", d)
    rules = conf.features.tier_rules
    assert [(r.tier, r.path_prefix) for r in rules[:3]] == [
        ("bb", "/bb/"),
        ("pfs", "/lus/scratch/"),
        ("pfs", "/lus/proj/"),
    ]
    assert len(rules) == 3 + len(BASE["features"]["tier_rules"])
    assert conf.site.tiers[1].stage is None and conf.site.tiers[1].stripe is None
