"""`pipeline.yaml`: the stages, their order and dependencies, read and checked in one place."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from iolake.config import ConfigError, safe_load

PIPELINE_FILE = Path(__file__).resolve().parents[1] / "pipeline.yaml"
STAGE_KEYS = {"name", "module", "inputs", "outputs", "new_logs", "depends_on", "params"}


@dataclass(frozen=True)
class Stage:
    name: str
    module: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    depends_on: tuple[str, ...]
    params: dict
    new_logs: dict | None = None  # {"from": "layer/name", "done": "layer/name"}: incremental by log

    @property
    def by_month(self) -> bool:
        """May the runner split its new logs into batches of whole job_months (`new_logs.by_month`):
        a stage whose rows for a log depend on that log alone."""
        return bool(self.new_logs and self.new_logs.get("by_month"))

    @property
    def available(self) -> bool:
        return importlib.util.find_spec(self.module) is not None

    @property
    def tables_in(self) -> tuple[str, ...]:
        """The Delta tables among the inputs (not `traces`, not `model:*`)."""
        return tuple(t for t in self.inputs if "/" in t)

    @property
    def tables_out(self) -> tuple[str, ...]:
        return tuple(t for t in self.outputs if "/" in t)


def load_pipeline(path: Path | str = PIPELINE_FILE) -> list[Stage]:
    path = Path(path)
    data = safe_load(path.read_text()) or {}
    stages: list[Stage] = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("stages", [])):
        unknown = set(raw) - STAGE_KEYS
        if unknown:
            raise ConfigError(f"{path}: stages[{i}]: unknown key(s) {', '.join(sorted(unknown))}")
        missing = {"name", "module"} - set(raw)
        if missing:
            raise ConfigError(f"{path}: stages[{i}]: missing key(s) {', '.join(sorted(missing))}")
        for dep in raw.get("depends_on", []):
            if dep not in seen:
                raise ConfigError(
                    f"{path}: stages[{i}] ({raw['name']}): depends_on {dep!r} is not an earlier stage"
                )
        seen.add(raw["name"])
        stage = Stage(
            raw["name"],
            raw["module"],
            tuple(raw.get("inputs", [])),
            tuple(raw.get("outputs", [])),
            tuple(raw.get("depends_on", [])),
            dict(raw.get("params") or {}),
            raw.get("new_logs"),
        )
        _check_tables(path, i, stage)
        stages.append(stage)
    return stages


def table_spec(name: str):
    """The `TableSpec` of `layer/name` (`bronze/posix`), or None when no table has that name."""
    from schemas import TABLES

    layer, _, table = name.partition("/")
    spec = TABLES.get(table)
    return spec if spec is not None and spec.layer == layer else None


def _check_tables(path: Path, i: int, stage: Stage) -> None:
    """Every declared table exists in `schemas/`; `new_logs` names declared tables."""
    where = f"{path}: stages[{i}] ({stage.name})"
    for t in stage.inputs + stage.outputs:
        if t == "traces" or t.startswith("model:"):
            continue
        if table_spec(t) is None:
            raise ConfigError(
                f"{where}: {t!r} is not a table of schemas/ (write layer/name, e.g. bronze/posix)"
            )
    if stage.new_logs is not None:
        keys = set(stage.new_logs)
        if not {"from", "done"} <= keys <= {"from", "done", "by_month"}:
            raise ConfigError(
                f"{where}: new_logs: needs the keys from, done (and optionally by_month), "
                f"not {', '.join(sorted(keys))}"
            )
        if not isinstance(stage.new_logs.get("by_month", False), bool):
            raise ConfigError(f"{where}: new_logs.by_month: must be true or false")
        if (
            stage.new_logs["from"] not in stage.inputs
            or stage.new_logs["done"] not in stage.outputs
        ):
            raise ConfigError(
                f"{where}: new_logs: `from` must be an input and `done` an output of the stage"
            )
