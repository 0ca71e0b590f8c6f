"""`pipeline.yaml`: the stages, their order and dependencies, read and checked in one place."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import yaml

from iolake.config import ConfigError

PIPELINE_FILE = Path(__file__).resolve().parents[1] / "pipeline.yaml"
STAGE_KEYS = {"name", "module", "inputs", "outputs", "depends_on", "params"}


@dataclass(frozen=True)
class Stage:
    name: str
    module: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    depends_on: tuple[str, ...]
    params: dict

    @property
    def available(self) -> bool:
        return importlib.util.find_spec(self.module) is not None


def load_pipeline(path: Path | str = PIPELINE_FILE) -> list[Stage]:
    path = Path(path)
    data = yaml.safe_load(path.read_text()) or {}
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
                raise ConfigError(f"{path}: stages[{i}] ({raw['name']}): depends_on {dep!r} is not an earlier stage")
        seen.add(raw["name"])
        stages.append(Stage(raw["name"], raw["module"], tuple(raw.get("inputs", [])), tuple(raw.get("outputs", [])),
                            tuple(raw.get("depends_on", [])), dict(raw.get("params") or {})))
    return stages
