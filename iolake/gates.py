"""Great Expectations gates: each table's suite (declared in `schemas/`) runs before its commit.

A failing gate raises `GateFailed` naming the table, the expectation and a sample of the
offending rows; the stage stops before anything is committed. Great Expectations is imported
only here, and only when a gate runs (it takes ~12 s and ~300 MB to import).
"""
from __future__ import annotations

import logging

from iolake.lake import GateFailed
from schemas import Expectation, TableSpec

log = logging.getLogger(__name__)


def _ge_expectation(gx, e: Expectation):
    ex = gx.expectations
    if e.kind == "not_null":
        return ex.ExpectColumnValuesToNotBeNull(column=e.column)
    if e.kind == "unique":
        return ex.ExpectColumnValuesToBeUnique(column=e.column)
    if e.kind == "compound_unique":
        return ex.ExpectCompoundColumnsToBeUnique(column_list=list(e.column))
    if e.kind == "in_set":
        return ex.ExpectColumnValuesToBeInSet(column=e.column, value_set=e.args["values"])
    if e.kind == "between":
        return ex.ExpectColumnValuesToBeBetween(
            column=e.column, min_value=e.args.get("min"), max_value=e.args.get("max")
        )
    raise ValueError(f"unknown expectation kind {e.kind!r}")


def suite_for(spec: TableSpec):
    import great_expectations as gx

    suite = gx.ExpectationSuite(name=f"{spec.layer}.{spec.name}")
    for e in spec.expectations:
        suite.add_expectation(_ge_expectation(gx, e))
    return suite


_CONTEXT = {}


def _context():
    if "ctx" not in _CONTEXT:
        import great_expectations as gx

        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        ctx = gx.get_context(mode="ephemeral")
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        _CONTEXT["ctx"] = ctx
    return _CONTEXT["ctx"]


def validate(spec: TableSpec, df, sample_rows: int = 5) -> None:
    """Run `spec`'s suite on a Spark or pandas DataFrame; raise GateFailed on any failure."""
    if not spec.expectations:
        return
    ctx = _context()
    is_spark = hasattr(df, "sparkSession")
    name = f"{spec.layer}_{spec.name}"
    try:
        source = ctx.data_sources.get(name)
    except (KeyError, ValueError):
        source = (ctx.data_sources.add_spark if is_spark else ctx.data_sources.add_pandas)(name=name)
    try:
        asset = source.get_asset("batch")
    except (LookupError, ValueError):
        asset = source.add_dataframe_asset(name="batch")
    try:
        bd = asset.get_batch_definition("whole")
    except (KeyError, ValueError):
        bd = asset.add_batch_definition_whole_dataframe("whole")
    batch = bd.get_batch(batch_parameters={"dataframe": df})
    result = batch.validate(suite_for(spec), result_format={"result_format": "SUMMARY",
                                                            "partial_unexpected_count": sample_rows})
    if result.success:
        return
    problems = []
    for r in result.results:
        if r.success:
            continue
        cfg = r.expectation_config
        kwargs = {k: v for k, v in cfg.kwargs.items() if k != "batch_id"}
        res = r.result or {}
        problems.append(
            f"  {cfg.type}({kwargs}): {res.get('unexpected_count', '?')} offending rows; "
            f"sample: {res.get('partial_unexpected_list', [])[:sample_rows]}"
        )
    raise GateFailed(f"gate {spec.layer}.{spec.name} failed, nothing committed:\n" + "\n".join(problems))
