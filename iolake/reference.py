"""Reference pages generated from the code: `docs/reference/*.md`.

Reads `schemas.TABLES` (tables), `conf/*.yaml` with `iolake.config`'s types (settings),
`pipeline.yaml` through `iolake.pipeline` (stages) and `schemas.bottleneck_tags.CATALOG` (tags);
writes index.md, tables.md, settings.md, stages.md and tags.md under docs/reference/.
Stage modules (`jobs/`) and the tag rules (`features/bottleneck_tags.py`) are read as source
with `ast`, never imported: the platform must not import them (an import-linter contract).

    python -m iolake.reference          # write the pages
    python -m iolake.reference --check  # exit 1 naming each stale page, 0 when all are current

The pages are deterministic (sorted, no timestamps) so a test can compare them with a fresh render.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
import sys
import typing
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "docs" / "reference"
COMMAND = "python -m iolake.reference"
LAYERS = ("bronze", "silver", "gold", "ops")
TAG_RULES_FILE = ROOT / "features" / "bottleneck_tags.py"


# --- Markdown helpers ----------------------------------------------------------------------------


def cell(value) -> str:
    """A Markdown table cell of text: one line, `|` escaped, `<` kept from starting a tag."""
    return " ".join(str(value).split()).replace("|", "\\|").replace("<", "&lt;")


def code(value) -> str:
    """`value` as inline code in a table cell (empty stays empty). A value holding `|` is text:
    renderers disagree on a pipe inside a code span in a table (GitHub needs it escaped, MkDocs
    then shows the backslash)."""
    text = " ".join(str(value).split())
    if "|" in text:
        return cell(text)
    return f"`{text}`" if text else ""


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line."""
    if not doc:
        return ""
    para = doc.strip().split("\n\n")[0]
    return " ".join(para.split())


def header(title: str, what: str) -> list[str]:
    return [
        f"# {title}",
        "",
        what,
        "",
        f"Generated from the code by `{COMMAND}`; do not edit by hand.",
        "",
    ]


def page(lines: list[str]) -> str:
    return "\n".join(lines).rstrip("\n") + "\n"


def yaml_value(value) -> str:
    """A setting's value as YAML writes it inline (`null`, `true`, `[a, b]`)."""
    if isinstance(value, str):
        return value
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6)
    return text.strip().removesuffix("...").strip()


# --- tables --------------------------------------------------------------------------------------


def write_modes(root: Path = ROOT, stages=None) -> dict[str, str]:
    """Table name -> the write modes the code commits it with (`iolake.lake.writer`), read by
    `ast` from the `.write(...)` calls of the stage modules and of iolake/ (else `insert`)."""
    from iolake.pipeline import load_pipeline

    found: dict[str, set[str]] = {}
    for stage in load_pipeline(root / "pipeline.yaml") if stages is None else stages:
        path = module_file(root, stage.module)
        if path is not None:
            _scan_writes(path, found, wildcard_outputs=stage.tables_out)
    for path in sorted((root / "iolake").rglob("*.py")):
        _scan_writes(path, found, wildcard_outputs=())
    return {name: ", ".join(sorted(modes)) for name, modes in found.items()}


def _scan_writes(path: Path, found: dict[str, set[str]], wildcard_outputs: tuple[str, ...]) -> None:
    """Record the mode of each `write(table, ...)` call in `path`; a table named by a format string
    (`f"bronze/{t}"`) stands for the stage's outputs of that layer no call names outright."""
    tree = ast.parse(path.read_text())
    consts = _module_strings(tree)
    named: dict[str, set[str]] = {}
    wild: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr == "write"
            or isinstance(func, ast.Name)
            and func.id == "write"
        ):
            continue
        mode = next(
            (
                k.value.value
                for k in node.keywords
                if k.arg == "mode" and isinstance(k.value, ast.Constant)
            ),
            "insert",
        )
        for arg in node.args:
            table = _table_of(arg, consts)
            if table is not None:
                named.setdefault(table, set()).add(mode)
                break
            head = arg.values[0] if isinstance(arg, ast.JoinedStr) and arg.values else None
            if isinstance(head, ast.Constant):
                wild.setdefault(str(head.value), set()).add(mode)
                break
    for table, modes in named.items():
        found.setdefault(table, set()).update(modes)
    for prefix, modes in wild.items():
        for out in wildcard_outputs:
            if out.startswith(prefix) and out not in named:
                found.setdefault(out, set()).update(modes)


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound to a string (`OUT = "gold/x"`, `A, B = "...", "..."`) or to a
    schema's spec (`from schemas.runs import SPEC as RUNS` -> `ops/runs`)."""
    from schemas import TABLES

    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                pairs = []
                if isinstance(target, ast.Name):
                    pairs = [(target, node.value)]
                elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts))
                for t, v in pairs:
                    if isinstance(t, ast.Name) and isinstance(getattr(v, "value", None), str):
                        out[t.id] = v.value
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("schemas."):
            spec = TABLES.get(node.module.split(".", 1)[1])
            for alias in node.names:
                if alias.name == "SPEC" and spec is not None:
                    out[alias.asname or alias.name] = f"{spec.layer}/{spec.name}"
    return out


def _table_of(arg: ast.expr, consts: dict[str, str]) -> str | None:
    value = None
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        value = arg.value
    elif isinstance(arg, ast.Name):
        value = consts.get(arg.id)
    if value and value.split("/")[0] in LAYERS and "/" in value:
        return value
    return None


def _expectation(e) -> str:
    column = ", ".join(e.column) if isinstance(e.column, tuple) else e.column
    args = ", ".join(f"{k}={v!r}" for k, v in sorted(e.args.items()))
    return f"{e.kind}({column}{'; ' + args if args else ''})"


def render_tables(tables: dict, modes: dict[str, str] | None = None) -> str:
    """tables.md: every table of `tables` (name -> TableSpec), by layer, then by name."""
    modes = modes or {}
    lines = header(
        "Tables",
        "Every table of the lake, as `schemas/` declares it "
        "(`schemas.TABLES`): what it holds, how it is partitioned, keyed, written "
        "and checked, and its columns. Write modes (`iolake/lake/writer.py`): "
        "`insert` is an insert-only MERGE matched on the merge keys; `files` adds "
        "ingest's staged Parquet files (falling back to `insert`); `overwrite` "
        "replaces the rows; `append` adds them as they are.",
    )
    specs = sorted(tables.values(), key=lambda s: (_layer_rank(s.layer), s.name))
    lines += ["| Table | Layer | What it holds |", "|---|---|---|"]
    lines += [
        f"| [{s.name}](#{s.layer}{s.name}) | {s.layer} | {cell(first_paragraph(s.doc))} |"
        for s in specs
    ]
    lines.append("")
    for s in specs:
        lines += _table_section(s, modes.get(f"{s.layer}/{s.name}", "insert"))
    return page(lines)


def _layer_rank(layer: str) -> int:
    return LAYERS.index(layer) if layer in LAYERS else len(LAYERS)


def _table_section(s, mode: str) -> list[str]:
    try:
        zorder = ", ".join(s.zorder_columns) or "none (compaction only)"
    except ValueError as e:
        zorder = f"invalid: {e}"
    if s.sorted_by:  # `iolake maintain` sorts it instead (iolake/lake/layout.py)
        zorder = f"none: sorted by {', '.join(s.sorted_by)} in small row groups (delta-rs)"
    expectations = list(s.expectations) + list(s.extra(s) if s.extra else [])
    doc = first_paragraph(s.doc).replace("<", "&lt;")
    lines = [f"## {s.layer}/{s.name}", "", doc or "(no description)", ""]
    lines += table(
        ["Property", "Value"],
        [
            ["Path", code(f"<lake>/{s.layer}/{s.name}")],
            ["Partition columns", cell(", ".join(s.partition_by)) or "none"],
            ["Keys (a row's identity)", cell(", ".join(s.keys))],
            ["Merge keys (insert matches on)", cell(", ".join(s.merge_on))],
            ["Write mode", cell(mode)],
            ["Z-order columns", cell(zorder)],
            [
                "Delta properties",
                cell(", ".join(f"{k}={v}" for k, v in sorted(s.properties.items()))) or "none",
            ],
            ["Expectations", cell("; ".join(_expectation(e) for e in expectations)) or "none"],
        ],
    )
    lines += ["", f"{len(s.struct.fields)} columns:", ""]
    lines += table(
        ["Column", "Spark type", "Nullable", "Description"],
        [
            [
                code(f.name),
                code(f.dataType.simpleString()),
                "yes" if f.nullable else "no",
                cell((f.metadata or {}).get("comment", "")),
            ]
            for f in s.struct.fields
        ],
    )
    lines.append("")
    return lines


# --- settings ------------------------------------------------------------------------------------


def flatten(data: dict, prefix: str = "") -> dict[str, object]:
    """Dotted key -> value for every leaf of a YAML mapping (lists are values, not sections)."""
    out: dict[str, object] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


_KEY = re.compile(
    r'^(?P<indent> *)(?P<key>"[^"]*"|\'[^\']*\'|[^\s#\-"\'][^:#]*?)'
    r":(?:\s+|$)(?P<rest>.*)$"
)


def _split_comment(text: str) -> tuple[str, str | None]:
    """(value text, trailing comment or None): the first ` #` outside quotes starts the comment."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip(), text[i + 1 :].strip()
    return text.rstrip(), None


def yaml_comments(text: str) -> dict[str, str]:
    """Dotted key -> its comment in a YAML file of block mappings: the comment lines directly
    above the key, then its trailing comment and the comment-only lines continuing it (indented
    deeper than the next key). The file's leading comment block is the file's, not a key's."""
    comments: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    above: list[str] = []
    last_key: str | None = None  # the key whose trailing comment the next lines may continue
    lines = text.splitlines()
    seen_key = False
    for n, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            above, last_key = [], None
            continue
        if stripped.startswith("#"):
            body = stripped[1:].strip()
            col = len(line) - len(line.lstrip())
            if last_key is not None and col > _next_key_indent(lines, n):
                comments[last_key] = f"{comments[last_key]} {body}".strip()
            elif seen_key:
                above.append(body)
                last_key = None
            continue
        m = _KEY.match(line)
        if m is None:  # a list item or a flow value's continuation
            continue
        seen_key = True
        indent, key = len(m["indent"]), m["key"].strip().strip("\"'")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        dotted = ".".join([k for _, k in stack] + [key])
        stack.append((indent, key))
        _, trailing = _split_comment(m["rest"])
        parts = above + ([trailing] if trailing else [])
        comments[dotted] = " ".join(parts)
        above = []
        last_key = dotted if trailing else None
    return comments


def _next_key_indent(lines: list[str], n: int) -> int:
    for line in lines[n + 1 :]:
        s = line.strip()
        if s and not s.startswith("#"):
            return len(line) - len(line.lstrip())
    return 0


def setting_types() -> dict[str, str]:
    """Dotted key -> its type as `iolake.config` declares it (with the choices it checks)."""
    from iolake.config import CHOICES, Config

    out: dict[str, str] = {}

    def walk(tp, prefix: str) -> None:
        for name, hint in typing.get_type_hints(tp).items():
            key = f"{prefix}{name}"
            if dataclasses.is_dataclass(hint) and typing.get_origin(hint) is None:
                walk(hint, key + ".")
                continue
            text = re.sub(r"\b(?:[a-z_]+\.)+([A-Z]\w*)", r"\1", _type_name(hint))
            choices = CHOICES.get(tuple(key.split(".")))
            out[key] = f"{text} ({' | '.join(choices)})" if choices else text

    walk(Config, "")
    return out


def _type_name(tp) -> str:
    return tp.__name__ if isinstance(tp, type) and typing.get_origin(tp) is None else str(tp)


def _type_of(key: str, types: dict[str, str]) -> str:
    """A key's type; a property of a `dict[str, str]` section (spark.properties.*) is `str`."""
    if key in types:
        return types[key]
    parent = key
    while "." in parent:
        parent = parent.rsplit(".", 1)[0]
        if parent in types and types[parent].startswith("dict["):
            return "str"
    return ""


def render_settings(conf_dir: Path | None = None, types: dict[str, str] | None = None) -> str:
    """settings.md: every key of base.yaml (and any property an overlay adds), its default, type,
    comment and the values conf/local.yaml and conf/cluster.yaml give it."""
    from iolake.config import CONF_DIR, ENVS, _read_yaml

    conf_dir = Path(conf_dir) if conf_dir else CONF_DIR
    types = setting_types() if types is None else types
    files = {"base": conf_dir / "base.yaml", **{env: conf_dir / f"{env}.yaml" for env in ENVS}}
    values, notes = {}, {}
    for name, path in files.items():
        values[name] = flatten(_read_yaml(path)) if path.exists() else {}
        notes[name] = yaml_comments(path.read_text()) if path.exists() else {}
        missing = sorted(set(values[name]) - set(notes[name]))
        if missing:
            raise ValueError(f"{path}: could not find the key(s) {', '.join(missing)} in the text")
    base = values["base"]
    keys = list(base) + sorted({k for env in ENVS for k in values[env]} - set(base))
    lines = header(
        "Settings",
        "Every setting of `conf/base.yaml` (the defaults), as a dotted "
        "key, with "
        "its type (`iolake/config.py`), its comment in base.yaml and the values the "
        f"environments override it with ({', '.join(f'`conf/{e}.yaml`' for e in ENVS)})"
        ". "
        "A key only an environment sets has no default.",
    )
    sections: dict[str, list[str]] = {}
    for key in keys:
        sections.setdefault(key.split(".")[0], []).append(key)
    for section, section_keys in sections.items():
        lines += [f"## {section}", ""]
        if notes["base"].get(section):
            lines += [notes["base"][section], ""]
        rows = []
        for key in section_keys:
            default = code(yaml_value(base[key])) if key in base else "(not set)"
            comment = notes["base"].get(key) or next(
                (notes[e][key] for e in ENVS if notes[e].get(key)), ""
            )
            overrides = [
                code(f"{e}: {yaml_value(values[e][key])}") for e in ENVS if key in values[e]
            ]
            rows.append(
                [
                    code(key),
                    default,
                    code(_type_of(key, types)),
                    cell(comment),
                    "<br>".join(overrides),
                ]
            )
        lines += table(["Key", "Default", "Type", "What", "Overrides"], rows)
        lines.append("")
    return page(lines)


# --- stages --------------------------------------------------------------------------------------


def module_file(root: Path, module: str) -> Path | None:
    base = root.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def module_doc(root: Path, module: str) -> str:
    """The first paragraph of a module's docstring, read with `ast` (never imported)."""
    path = module_file(root, module)
    if path is None:
        return "(module not present)"
    return first_paragraph(ast.get_docstring(ast.parse(path.read_text()))).replace("<", "&lt;")


def render_stages(stages, root: Path = ROOT) -> str:
    """stages.md: every stage of pipeline.yaml in run order."""
    lines = header(
        "Stages",
        "The stages of `pipeline.yaml` in run order (`iolake run` runs them; "
        "`iolake stage NAME` runs one): the module, the tables it reads and writes, "
        "whether it is incremental by log (`new_logs`) and what it waits for.",
    )
    lines += table(
        ["#", "Stage", "Module", "Depends on"],
        [
            [
                str(i),
                f"[{st.name}](#{st.name})",
                code(st.module),
                cell(", ".join(st.depends_on)) or "—",
            ]
            for i, st in enumerate(stages, 1)
        ],
    )
    lines.append("")
    for st in stages:
        new_logs = (
            f"from {code(st.new_logs['from'])}, done {code(st.new_logs['done'])}"
            + ("; in batches of whole months past `spark.batch_logs`" if st.by_month else "")
            if st.new_logs
            else "no: the stage reads its inputs whole"
        )
        lines += [f"## {st.name}", "", module_doc(root, st.module) or "(no docstring)", ""]
        lines += table(
            ["Property", "Value"],
            [
                ["Module", code(st.module)],
                ["Inputs", cell(", ".join(st.inputs)) or "none"],
                ["Outputs", cell(", ".join(st.outputs)) or "none"],
                ["New logs (incremental)", new_logs],
                ["Depends on", cell(", ".join(st.depends_on)) or "none"],
                [
                    "Params",
                    cell(", ".join(f"{k}={v}" for k, v in sorted(st.params.items()))) or "none",
                ],
            ],
        )
        lines.append("")
    return page(lines)


# --- tags ----------------------------------------------------------------------------------------


def tag_rules(path: Path = TAG_RULES_FILE, settings: set[str] | None = None) -> dict[str, tuple]:
    """tag -> (severities, settings) of its rule in `features/bottleneck_tags.py`, read by `ast`:
    `RULES` maps a tag to its rule function (or a lambda calling it with constants); the severities
    are the string constants of the `Rule(...)` severity argument, the settings the `tags:` keys
    the function reads (`c.<key>`, `getattr(c, <name>)`), with the helpers it calls."""
    from iolake.config import TagsConf

    settings = {f.name for f in dataclasses.fields(TagsConf)} if settings is None else settings
    tree = ast.parse(path.read_text())
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    rules = next(
        (
            n.value
            for n in tree.body
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "RULES" for t in n.targets)
        ),
        None,
    )
    if not isinstance(rules, ast.Dict):
        raise TypeError(f"{path}: RULES is not a dict literal (tag -> rule)")
    out: dict[str, tuple] = {}
    for k, v in zip(rules.keys, rules.values):
        name, args = (v.id, []) if isinstance(v, ast.Name) else (v.body.func.id, v.body.args)
        fn = funcs[name]
        params = [a.arg for a in fn.args.args]
        env = {p: a.value for p, a in zip(params, args) if isinstance(a, ast.Constant)}
        severities, used = _rule_facts(fn, funcs, env, settings, set())
        out[k.value] = (tuple(sorted(severities)), tuple(sorted(used)))
    return out


def _rule_facts(fn: ast.FunctionDef, funcs: dict, env: dict, settings: set[str], seen: set[str]):
    seen.add(fn.name)
    severities, used = set(), set()
    conf = fn.args.args[0].arg if fn.args.args else "c"
    local = dict(env)
    for node in ast.walk(fn):  # format strings bound to names (setting = f"redundant_{rw}_ratio")
        one = isinstance(node, ast.Assign) and len(node.targets) == 1
        target = node.targets[0] if one else None
        if isinstance(target, ast.Name):
            text = _eval_str(node.value, local)
            if text is not None:
                local[target.id] = text
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == conf:
            if node.attr in settings:
                used.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "getattr" and len(node.args) == 2:
                text = _eval_str(node.args[1], local)
                if text in settings:
                    used.add(text)
            elif node.func.id == "Rule" and len(node.args) > 2:
                severities |= {
                    c.value
                    for c in ast.walk(node.args[2])
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
            elif node.func.id in funcs and node.func.id not in seen:
                s, u = _rule_facts(funcs[node.func.id], funcs, {}, settings, seen)
                severities |= s
                used |= u
    return severities, used


def _eval_str(node: ast.expr, env: dict) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and isinstance(env.get(node.id), str):
        return env[node.id]
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                v = v.value
            text = _eval_str(v, env)
            if text is None:
                return None
            parts.append(text)
        return "".join(parts)
    return None


def render_tags(catalog: dict, rules: dict[str, tuple], base: dict) -> str:
    """tags.md: every tag of `catalog`, by code, with its rule's severities and settings."""
    from schemas.bottleneck_tags import NO_ISSUE

    tags = base.get("tags", {})
    lines = header(
        "Tags",
        "Every bottleneck tag (`schemas.bottleneck_tags.CATALOG`) by code: its "
        "severity, the Drishti insight codes it stands for, the `tags.*` settings its "
        "rule in `features/bottleneck_tags.py` reads (defaults from `conf/base.yaml`) "
        "and its "
        "recommendation (the clauses marked Lustre or GPFS are added only for a job with files "
        "on that file system: `schemas.bottleneck_tags.recommendation`). Every tag lists at most `tags.evidence_max` "
        f"(default {tags.get('evidence_max', '?')}) files or ranks as evidence. "
        "See also [settings](settings.md#tags).",
    )
    rows = []
    for name, tag in sorted(catalog.items(), key=lambda kv: kv[1].code):
        severities, used = rules.get(name, (("info",), ()) if name == NO_ISSUE else ((), ()))
        if name != NO_ISSUE and not severities:
            raise ValueError(f"tag {name}: no rule in {TAG_RULES_FILE.name} gives it a severity")
        thresholds = "<br>".join(code(f"tags.{s} = {yaml_value(tags.get(s))}") for s in used)
        rows.append(
            [
                code(tag.code),
                code(name),
                cell(", ".join(severities)),
                cell(", ".join(tag.drishti)) or "—",
                thresholds or "—",
                "<br>".join(
                    cell(text)
                    for text in (
                        tag.recommendation,
                        tag.lustre and f"Lustre only: {tag.lustre}",
                        tag.gpfs and f"GPFS only: {tag.gpfs}",
                    )
                    if text
                )
                or "—",
            ]
        )
    lines += table(["Code", "Tag", "Severity", "Drishti", "Settings", "Recommendation"], rows)
    return page(lines)


# --- index and the command -----------------------------------------------------------------------

PAGES = {
    "tables.md": "every table: layer, what it holds, partitioning, keys, write mode, Z-order, "
    "Delta properties, expectations and columns",
    "settings.md": "every setting of conf/base.yaml: default, type, comment and environment "
    "overrides",
    "stages.md": "every stage of pipeline.yaml in run order: module, inputs, outputs, "
    "incrementality",
    "tags.md": "every bottleneck tag: code, severity, Drishti codes, threshold settings, "
    "recommendation",
}


def render_index() -> str:
    lines = header(
        "Reference",
        "Pages generated from the code, so they cannot drift from it: "
        "`tests/iolake/test_reference.py` fails when a committed page differs from a "
        f"fresh render. After changing a schema, a setting, a stage or a tag, run "
        f"`{COMMAND}` and commit the pages; `{COMMAND} --check` names the stale ones.",
    )
    lines += [
        f"- [{name.removesuffix('.md').capitalize()}]({name}): {what}"
        for name, what in PAGES.items()
    ]
    return page(lines)


def render_all(root: Path = ROOT) -> dict[str, str]:
    """File name -> page text, from the project at `root`."""
    from iolake.config import _read_yaml
    from iolake.pipeline import load_pipeline
    from schemas import TABLES
    from schemas.bottleneck_tags import CATALOG

    stages = load_pipeline(root / "pipeline.yaml")
    return {
        "index.md": render_index(),
        "tables.md": render_tables(TABLES, write_modes(root, stages)),
        "settings.md": render_settings(root / "conf"),
        "stages.md": render_stages(stages, root),
        "tags.md": render_tags(
            CATALOG,
            tag_rules(root / "features" / "bottleneck_tags.py"),
            _read_yaml(root / "conf" / "base.yaml"),
        ),
    }


def stale_pages(pages: dict[str, str], out_dir: Path = OUT_DIR) -> list[str]:
    """The pages whose file is missing or differs from `pages`."""
    return [
        name
        for name, text in sorted(pages.items())
        if not (out_dir / name).exists() or (out_dir / name).read_text() != text
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog=COMMAND, description="Write the reference pages in docs/reference/."
    )
    p.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 naming each stale page"
    )
    args = p.parse_args(argv)
    pages = render_all()
    stale = stale_pages(pages)
    if args.check:
        for name in stale:
            print(f"stale: {OUT_DIR.relative_to(ROOT) / name} (run {COMMAND})")
        return 1 if stale else 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (OUT_DIR / name).write_text(text)
    print(f"wrote {len(pages)} pages to {OUT_DIR.relative_to(ROOT)} ({len(stale)} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
