"""Great Expectations gates: each table's suite (declared in `schemas/`) runs before its commit.

A failing gate raises `GateFailed` naming the table, the expectation and a sample of the
offending rows; the stage stops before anything is committed.

On a Spark DataFrame the suite is first decided in one pass (`unexpected_counts`: one
aggregation for every null, set and range rule, one grouping per uniqueness rule), with the
same semantics as the Great Expectations classes it mirrors (nulls ignored except by not_null;
rows whose compound key is all null ignored). Great Expectations, which computes several
metrics per expectation and so scans a table many times, runs only when that pass finds a
failure, and writes the report. Its verdict is the one that counts. `tests/test_gates.py` checks
that both agree, rule by rule, on passing and failing frames. Great Expectations is imported
only here, and only when needed (it takes ~12 s and ~300 MB to import).
"""

from __future__ import annotations

import logging
import threading

from schemas import Expectation, TableSpec

log = logging.getLogger(__name__)


class GateFailed(RuntimeError):
    """A gate failed: nothing was committed (`iolake.lake` re-exports it for the lake's callers)."""


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
# Ingest gates its tables in threads (`ingest.commit_threads`); Great Expectations' context is not
# documented as thread-safe, so its creation and every validation through it hold this lock.
_CONTEXT_LOCK = threading.RLock()


def _context():
    if "ctx" not in _CONTEXT:
        import great_expectations as gx

        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        ctx = gx.get_context(mode="ephemeral")
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        _CONTEXT["ctx"] = ctx
    return _CONTEXT["ctx"]


def _unexpected(e: Expectation):
    """The Spark condition marking a row that breaks a null, set or range rule (None for uniqueness)."""
    import pyspark.sql.functions as F

    if e.kind in ("unique", "compound_unique"):
        return None
    if e.kind == "not_null":
        return F.col(e.column).isNull()
    c = F.col(e.column)
    if e.kind == "in_set":
        return c.isNotNull() & ~c.isin(list(e.args["values"]))
    if e.kind == "between":
        out = F.lit(False)
        if e.args.get("min") is not None:
            out = out | (c < F.lit(e.args["min"]))
        if e.args.get("max") is not None:
            out = out | (c > F.lit(e.args["max"]))
        return c.isNotNull() & out
    raise ValueError(f"unknown expectation kind {e.kind!r}")


def unexpected_counts(spec: TableSpec, df) -> list[tuple[Expectation, int]]:
    """Rows of a Spark DataFrame breaking each of `spec`'s expectations, in the spec's order.

    Null, set and range rules share one aggregation. A uniqueness rule counts the rows whose key
    occurs more than once (as Great Expectations does): one grouping each.
    """
    import pyspark.sql.functions as F

    rules = [(e, _unexpected(e)) for e in spec.expectations]
    counts = [0] * len(rules)
    aggs = [
        F.sum(F.when(cond, 1).otherwise(0)).alias(f"e{i}")
        for i, (_, cond) in enumerate(rules)
        if cond is not None
    ]
    if aggs:
        got = df.agg(*aggs).first()
        for i, (_, cond) in enumerate(rules):
            if cond is not None:
                counts[i] = int(got[f"e{i}"] or 0)
    for i, (e, cond) in enumerate(rules):
        if cond is not None:
            continue
        cols = [e.column] if isinstance(e.column, str) else list(e.column)
        # one column: nulls are ignored; several: only rows whose every key column is null
        keep = F.col(cols[0]).isNotNull()
        for c in cols[1:]:
            keep = keep | F.col(c).isNotNull()
        dup = df.where(keep).groupBy(*cols).count().where(F.col("count") > 1)
        counts[i] = int(dup.agg(F.sum("count")).first()[0] or 0)
    return [(e, n) for (e, _), n in zip(rules, counts)]


def great_expectations_result(spec: TableSpec, df, sample_rows: int = 5):
    """Great Expectations' validation result of `spec`'s suite on a Spark or pandas DataFrame."""
    with _CONTEXT_LOCK:
        return _validate_with_ge(spec, df, sample_rows)


def _validate_with_ge(spec: TableSpec, df, sample_rows: int):
    ctx = _context()
    is_spark = hasattr(df, "sparkSession")
    name = f"{spec.layer}_{spec.name}"
    try:
        source = ctx.data_sources.get(name)
    except (KeyError, ValueError):
        source = (ctx.data_sources.add_spark if is_spark else ctx.data_sources.add_pandas)(
            name=name
        )
    try:
        asset = source.get_asset("batch")
    except (LookupError, ValueError):
        asset = source.add_dataframe_asset(name="batch")
    try:
        bd = asset.get_batch_definition("whole")
    except (KeyError, ValueError):
        bd = asset.add_batch_definition_whole_dataframe("whole")
    batch = bd.get_batch(batch_parameters={"dataframe": df})
    return batch.validate(
        suite_for(spec),
        result_format={"result_format": "SUMMARY", "partial_unexpected_count": sample_rows},
    )


def validate(spec: TableSpec, df, sample_rows: int = 5) -> None:
    """Run `spec`'s suite on a Spark or pandas DataFrame; raise GateFailed on any failure."""
    if not spec.expectations:
        return
    broken = []
    if hasattr(df, "sparkSession"):
        broken = [e for e, n in unexpected_counts(spec, df) if n]
        if not broken:
            return
    result = great_expectations_result(spec, df, sample_rows)
    if result.success:
        if broken:  # the one-pass check and Great Expectations disagree: GE's verdict counts
            log.warning(
                "gate %s.%s: the one-pass check flagged %s, Great Expectations passed them",
                spec.layer,
                spec.name,
                [(e.kind, e.column) for e in broken],
            )
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
    raise GateFailed(
        f"gate {spec.layer}.{spec.name} failed, nothing committed:\n" + "\n".join(problems)
    )
