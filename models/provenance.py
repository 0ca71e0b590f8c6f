"""Where a registered model version's predictions come from: its name, version, the alias it was
loaded by, and what it was trained on, in words a user of the advice can weigh.

`jobs/train.py` tags every training run with `iolake.training_source` (the rows it learnt from:
`silver/file_features`, `gold/placement_labels from lake`, `benchmark iosweep (shipped: ...)`)
and `iolake.training_origin`:

- `lake`               this lake's own jobs: the model has seen this site's file systems;
- `benchmark`          a benchmark table given in conf (`models.benchmark_table`, or a path as
                       `models.default_benchmark`): the machine that benchmark ran on;
- `shipped_benchmark`  a table shipped with iolake (`models/benchmarks/`, e.g. the IOR sweep of a
                       2-core VM): never this site's machine.

Runs from before the origin tag get it from the source text (`origin_of`). `note` says plainly
what a factor from such a model is worth. MLflow is imported only where a run is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas._spec import TRAINING_ORIGINS as ORIGINS

SOURCE_TAG, ORIGIN_TAG = "iolake.training_source", "iolake.training_origin"


@dataclass(frozen=True)
class Provenance:
    name: str  # registered model name
    version: str
    alias: str | None  # the alias it was loaded by (None: loaded by version)
    trained_on: str  # the training run's `iolake.training_source`
    origin: str  # one of ORIGINS

    def label(self) -> str:
        """`iolake-bandwidth v3 (@champion)`."""
        return f"{self.name} v{self.version}" + (f" (@{self.alias})" if self.alias else "")

    def note(self) -> str:
        return note(self.origin, self.trained_on)

    def short(self) -> str:
        """`trained on ...` alone, without what follows from it (for evidence lists)."""
        return note(self.origin, self.trained_on).split(", not on ", 1)[0]


def shipped_name(source: str) -> str | None:
    """The shipped benchmark a source text names (`benchmark iosweep (shipped: /...)`), or None."""
    from models.benchmarks import SHIPPED

    return next((n for n in SHIPPED if f"{n} (shipped:" in (source or "")), None)


def origin_of(source: str | None) -> str:
    """The origin of a training source text: a shipped table, another benchmark, the lake."""
    s = source or ""
    if shipped_name(s):
        return "shipped_benchmark"
    if s.startswith("benchmark") or "from benchmark" in s:
        return "benchmark"
    if s.startswith("silver/") or s.endswith("from lake") or s == "lake":  # `lake`: a label source
        return "lake"
    return "unknown"


def origin_for(conf_models, from_benchmark: bool) -> str:
    """The origin `jobs/train.py` records: the lake's rows, or which benchmark table (conf `models`)."""
    from models.benchmarks import SHIPPED

    if not from_benchmark:
        return "lake"
    m = conf_models
    return (
        "shipped_benchmark"
        if not m.benchmark_table and m.default_benchmark in SHIPPED
        else "benchmark"
    )


def note(origin: str, trained_on: str | None) -> str:
    """What the model's figures are worth here, in one sentence."""
    from models.benchmarks import ABOUT

    src = trained_on or "an unrecorded source"
    if origin == "shipped_benchmark":
        name = shipped_name(src)
        about = ABOUT.get(name, f"the benchmark table shipped with iolake ({src})")
        return (
            f"trained on {about}, not on this site's file systems: treat the factor as the "
            "direction, not the size"
        )
    if origin == "benchmark":
        return (
            f"trained on {src}, not on this lake's jobs: its factors are that benchmark machine's; "
            "unless it ran on this site's file systems, treat the factor as the direction, not the size"
        )
    if origin == "lake":
        return f"trained on this lake's own jobs ({src})"
    return f"trained on {src}"


def of_version(mv, alias: str | None = None) -> Provenance:
    """The provenance of a registry ModelVersion, from its training run's tags (MLflow configured)."""
    import mlflow

    try:
        tags = mlflow.get_run(mv.run_id).data.tags if mv.run_id else {}
    except mlflow.exceptions.MlflowException:  # the run was deleted: the version still scores
        tags = {}
    source = tags.get(SOURCE_TAG) or tags.get("iolake.label_source") or ""
    origin = tags.get(ORIGIN_TAG) or origin_of(source)
    return Provenance(
        str(mv.name), str(mv.version), alias, source, origin if origin in ORIGINS else "unknown"
    )
