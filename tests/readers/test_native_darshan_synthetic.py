"""Differential test on synthetic logs: every (log format, module version, byte order,
compression) combination darshan-util 3.5.0 reads, including the ones no shared log has,
decoded by the native decoder and by libdarshan-util (the pydarshan decoder) must agree.
The logs come from tests/support/synthetic_darshan.py.
"""

from __future__ import annotations

import importlib.util

import pytest

from readers import (
    native_darshan as native,
)  # imports without the extension: `native._native` is None
from tests.support.data import need
from tests.support.synthetic_darshan import Gen, assert_same_table, combos, reference_decode

pytestmark = pytest.mark.slow  # shared corpus / built lakes: `make test` only, not `make check`

need(
    native._native is not None,
    "needs iolake_native, the native decoder's extension (pip install ./native)",
)
need(
    importlib.util.find_spec("darshan") is not None,
    "needs pydarshan, the reference decoder (pip install darshan)",
)


@pytest.mark.parametrize(
    "minor,big,comp,versions,seed", combos(), ids=lambda v: None if not isinstance(v, dict) else ""
)
def test_synthetic_log_equals_libdarshan_util(tmp_path, minor, big, comp, versions, seed):
    data = Gen(seed, minor, big, comp).log(versions)
    path = tmp_path / "synthetic.darshan"
    path.write_bytes(data)
    nat = native.decode(data)
    ref = reference_decode(str(path))
    assert set(nat.tables) == set(ref.tables)
    for t in ref.tables:
        assert_same_table(nat.tables[t], ref.tables[t], f"3.{minor:02d} big={big} {versions} {t}")
    assert nat.modules == ref.modules
    assert nat.partial_modules == ref.partial_modules
