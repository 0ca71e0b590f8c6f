"""iolake/reference.py: the committed docs/reference pages equal a fresh render, a render follows
its inputs, and every table, setting, stage and tag has its place."""

from dataclasses import replace

import yaml
from pyspark.sql import types as T

from iolake import reference
from iolake.config import CONF_DIR
from iolake.pipeline import load_pipeline
from schemas import TABLES
from schemas.bottleneck_tags import CATALOG, Tag

BASE_TEXT = (CONF_DIR / "base.yaml").read_text()


def test_reference_committed_pages_are_current():
    pages = reference.render_all()
    stale = reference.stale_pages(pages)
    assert not stale, f"stale reference pages {stale}: run python -m iolake.reference"
    committed = {p.name for p in reference.OUT_DIR.glob("*.md")}
    assert committed == set(pages), "run python -m iolake.reference (and delete stale pages)"


def test_reference_tables_follow_the_specs():
    spec = replace(
        TABLES["jobs"],
        name="probe_table",
        struct=T.StructType(
            [T.StructField("probe_col", T.LongType(), False, {"comment": "a probe's column"})]
        ),
    )
    tables = {k: v for k, v in TABLES.items() if k != "regressions"} | {"probe_table": spec}
    text = reference.render_tables(tables, {"bronze/probe_table": "overwrite"})
    assert "## bronze/probe_table" in text
    assert "| `probe_col` | `bigint` | no | a probe's column |" in text
    assert "| Write mode | overwrite |" in text
    assert "gold/regressions" not in text
    assert "gold/regressions" in reference.render_tables(TABLES)


def test_reference_settings_follow_the_conf(tmp_path):
    probe = "gates:\n  # above the probe\n  probe_key: 7  # the probe's comment\n"
    base = BASE_TEXT.replace("gates:\n", probe)
    (tmp_path / "base.yaml").write_text(base)
    (tmp_path / "local.yaml").write_text("gates:\n  probe_key: 9\n")
    text = reference.render_settings(tmp_path)
    row = "| `gates.probe_key` | `7` |  | above the probe the probe's comment | `local: 9` |"
    assert row in text
    (tmp_path / "base.yaml").write_text(BASE_TEXT.replace("  sample_rows: 5", "  probe_other: 5"))
    (tmp_path / "local.yaml").write_text("")
    text = reference.render_settings(tmp_path)
    assert "gates.sample_rows" not in text and "`gates.probe_other`" in text


def test_reference_comments_trailing_continued_and_above():
    text = (
        "# the file's header\nsec:  # the section\n  # above a\n  a: 1  # a's\n"
        "              # and more of a's\n  b: \"x # not a comment\"\n  c: [1, 2]  # c's\n"
    )
    assert reference.yaml_comments(text) == {
        "sec": "the section",
        "sec.a": "above a a's and more of a's",
        "sec.b": "",
        "sec.c": "c's",
    }


def test_reference_stages_and_tags_follow_their_inputs(tmp_path):
    stages = load_pipeline()
    text = reference.render_stages(stages[:-1])
    assert "## fleet" not in text and "## advise" in text
    catalog = {k: v for k, v in CATALOG.items() if k != "stragglers"}
    catalog["probe_tag"] = Tag("IO99", ("P99",), "fix it")
    rules = {t: (("high",), ()) for t in catalog} | {"probe_tag": (("warn",), ("small_bytes",))}
    text = reference.render_tags(catalog, rules, yaml.safe_load(BASE_TEXT))
    assert "| `IO99` | `probe_tag` | warn | P99 | `tags.small_bytes = 1048576` | fix it |" in text
    assert "`stragglers`" not in text


def test_reference_tag_rules_read_from_the_source():
    rules = reference.tag_rules()
    assert set(rules) == set(CATALOG) - {"no_issue"}
    assert rules["metadata_heavy"] == (
        ("high", "warn"),
        ("metadata_time_rank", "metadata_time_share", "min_io_time_s"),
    )
    assert rules["redundant_writes"] == (
        ("warn",),
        ("redundant_min_bytes", "redundant_min_share", "redundant_write_ratio"),
    )


def test_reference_every_table_setting_stage_and_tag_appears():
    pages = reference.render_all()
    for spec in TABLES.values():
        assert f"## {spec.layer}/{spec.name}\n" in pages["tables.md"]
    for key in reference.flatten(yaml.safe_load(BASE_TEXT)):
        assert f"| `{key}` |" in pages["settings.md"]
    for stage in load_pipeline():
        assert f"## {stage.name}\n" in pages["stages.md"]
    for name, tag in CATALOG.items():
        assert f"| `{tag.code}` | `{name}` |" in pages["tags.md"]
