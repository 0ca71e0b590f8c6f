"""Damaged logs keep what decodes: a log cut short inside a module's region (a copy cut while the
last regions, DXT, were being written: the commonest real damage) keeps every module whose region
lies before the cut, exactly as the whole log decodes it, with status `partial` and the damaged
modules named; a cut inside the job or name region is quarantined with the reason.

Each log is cut in the middle of each of its compressed regions (offsets from the log's own region
map); what survives is compared with the decode of the whole log.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from readers import native_darshan as native
from readers.base import DecodeError
from schemas.modules import DARSHAN_MODULE_TABLE
from tests.support.data import shared_path

pytestmark = pytest.mark.skipif(native._native is None, reason="the native decoder is not built")

DXT = {"DXT_POSIX", "DXT_MPIIO"}


def _table_of(module: str) -> str | None:
    """The bronze table a module's records land in (None: the module is not decoded)."""
    if module in DXT:
        return "io_ops"
    if module in ("LUSTRE", "HEATMAP"):
        return module.lower()
    return DARSHAN_MODULE_TABLE.get(module)


def _example_logs() -> list[Path]:
    import darshan

    return sorted((Path(darshan.__file__).parent / "examples" / "example_logs").glob("*.darshan"))


def _shared_logs() -> list[Path]:
    root = shared_path("darshan")
    with open(root / "MANIFEST.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    # small enough to cut many times (CI time); the ones that decode whole are kept by the caller
    return [
        root / r["path"]
        for r in rows
        if not r["path"].endswith(".gz") and int(r["bytes"]) < 2_000_000
    ]


def _expect(whole, regions, cut: int) -> tuple[set[str], set[str]]:
    """Decoded modules whose region ends before the cut, and the modules it damages (any module
    whose region runs past the cut, decoded into bronze or not)."""
    modules = {name: off + length for name, off, length in regions if name not in ("job", "names")}
    decoded = {m for m in modules if _table_of(m) and (m not in DXT or "io_ops" in whole.tables)}
    return {m for m in decoded if modules[m] <= cut}, {m for m, end in modules.items() if end > cut}


def _same(a: pa.Table, b: pa.Table) -> bool:
    return a.num_rows == b.num_rows and a.equals(b)


def _check_cut(path: Path, data: bytes, whole, regions, region: str, cut: int) -> str:
    """Cuts `data` at `cut`, checks the outcome; returns 'partial' or 'quarantined'."""
    kept, damaged = _expect(whole, regions, cut)
    try:
        got = native.decode(data[:cut])
    except DecodeError as e:
        # the job and name regions are needed for everything; with no module left, nothing is kept
        assert region in ("job", "names") or not kept, (
            f"{path.name} cut in {region}: lost the whole log ({e})"
        )
        return "quarantined"
    assert region not in ("job", "names"), f"{path.name} cut in {region} decoded"
    assert got.status == "partial" and set(got.damaged) == damaged, (
        path.name,
        region,
        got.damaged,
        damaged,
    )
    assert all(m in " ".join(got.notes) for m in damaged)
    assert _same(got.tables["jobs"], whole.tables["jobs"]) and _same(
        got.tables["files"], whole.tables["files"]
    )
    for m in kept - DXT:
        assert _same(got.tables[_table_of(m)], whole.tables[_table_of(m)]), (
            f"{path.name} cut in {region}: {m}"
        )
    for m in damaged - DXT:
        assert _table_of(m) not in got.tables, (
            f"{path.name} cut in {region}: damaged {m} has a table"
        )
    if kept & DXT:  # the surviving DXT module's segments, exactly
        ops = whole.tables["io_ops"]
        want = ops.filter(pa.compute.is_in(ops["source"], pa.array(sorted(kept & DXT))))
        assert _same(got.tables["io_ops"], want), f"{path.name} cut in {region}: io_ops"
    elif "io_ops" in got.tables:
        assert got.tables["io_ops"].num_rows == 0
    return "partial"


def _cut_every_region(paths: list[Path]) -> Counter:
    outcome: Counter = Counter()
    for path in paths:
        data = path.read_bytes()
        try:
            whole = native.decode(data)
        except DecodeError:  # quarantined whole (2.x, corrupt on purpose): nothing to salvage
            outcome["unreadable logs"] += 1
            continue
        regions = native.header_facts(data)["regions"]
        for name, off, length in regions:
            if length < 2 or off + length > len(data):
                continue
            outcome[
                (
                    "names" if name in ("job", "names") else "module",
                    _check_cut(path, data, whole, regions, name, off + length // 2),
                )
            ] += 1
    return outcome


def test_example_logs_cut_inside_each_region_keep_the_modules_before_the_cut():
    outcome = _cut_every_region(_example_logs())
    print("\n", dict(outcome))
    assert outcome[("module", "partial")] >= 10 and outcome[("names", "quarantined")] >= 10


def test_shared_logs_cut_inside_each_region_keep_the_modules_before_the_cut():
    paths = _shared_logs()
    assert len(paths) > 50
    outcome = _cut_every_region(paths)
    print(f"\n{len(paths)} shared logs:", dict(outcome))
    assert outcome[("module", "partial")] > 100


def test_cut_inside_the_dxt_region_keeps_every_counter_module():
    """The commonest damage: everything but DXT lands."""
    path = next(p for p in _example_logs() if p.name == "dxt.darshan")
    data = path.read_bytes()
    regions = {name: (off, length) for name, off, length in native.header_facts(data)["regions"]}
    off, length = regions["DXT_POSIX"]
    got = native.decode(data[: off + length // 3])
    whole = native.decode(data)
    assert got.status == "partial" and list(got.damaged) == ["DXT_POSIX"]
    assert "DXT_POSIX" in got.reason and "truncated" in got.reason
    assert _same(got.tables["posix"], whole.tables["posix"]) and got.tables["posix"].num_rows > 0
