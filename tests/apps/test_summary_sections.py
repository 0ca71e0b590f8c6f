"""apps/summary_sections.py's figures: the same size at 2 and at 100,000 ranks (every figure sums
over ranks), and trace strings drawn as text."""

from __future__ import annotations

import struct

import numpy as np
import pandas as pd

from apps import summary_sections as ss
from features import job_summary as js


def _job(ranks: int) -> tuple[dict, pd.DataFrame]:
    """A file-per-process POSIX job of `ranks` ranks writing 1 MiB each, with one STDIO log file."""
    posix = pd.DataFrame(
        {
            "log_id": "L",
            "record_id": range(1, ranks + 1),
            "rank": range(ranks),
            "POSIX_OPENS": 1,
            "POSIX_WRITES": 4,
            "POSIX_BYTES_WRITTEN": 1 << 20,
            "POSIX_MAX_BYTE_WRITTEN": (1 << 20) - 1,
            "POSIX_SIZE_WRITE_100K_1M": 4,
            "POSIX_ACCESS1_ACCESS": 1 << 18,
            "POSIX_ACCESS1_COUNT": 4,
            "POSIX_F_WRITE_TIME": 0.5,
            "POSIX_F_META_TIME": 0.1,
        }
    )
    stdio = pd.DataFrame(
        {
            "log_id": ["L"],
            "record_id": [0],
            "rank": [0],
            "STDIO_WRITES": [3],
            "STDIO_BYTES_WRITTEN": [300],
            "STDIO_F_WRITE_TIME": [0.01],
        }  # fmt: skip
    )
    names = pd.DataFrame(
        {
            "log_id": "L",
            "record_id": range(ranks + 1),
            "name": ["<STDOUT>"] + [f"/scratch/run/out.{i}" for i in range(ranks)],
        }
    )
    return {"POSIX": posix, "STDIO": stdio}, names


def _size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


def _figures(ranks: int) -> dict[str, bytes]:
    modules, names = _job(ranks)
    cost = js.pd_io_cost(modules, {"L": ranks})
    return {
        "io_cost": ss.draw_io_cost(cost, 10.0),
        "file_categories": ss.draw_file_categories(js.pd_file_categories(modules)),
        "access_sizes": ss.draw_access_sizes(js.pd_access_sizes(modules)),
        "op_counts": ss.draw_op_counts(js.pd_op_counts(modules)),
        "roots": ss.draw_roots(js.pd_data_access_by_root(modules, names)),
    }


def test_summary_figures_are_the_same_size_at_2_and_100000_ranks():
    small, large = _figures(2), _figures(100_000)
    for name in small:
        assert _size(small[name]) == _size(large[name]), name
        width, height = _size(large[name])
        assert width == 1000 and 150 < height < 1500, (name, width, height)


def test_summary_figures_sum_over_ranks():
    modules, names = _job(100_000)
    cost = js.pd_io_cost(modules, {"L": 100_000}).set_index("module")
    assert cost.loc["POSIX", "write_time_s"] == 0.5 and cost.loc["POSIX", "meta_time_s"] == 0.1
    roots = js.pd_data_access_by_root(modules, names).set_index("filesystem_root")
    assert roots.loc["/scratch", "files_written"] == 100_000
    assert roots.loc["/scratch", "bytes_written"] == 100_000 << 20
    ops = js.pd_op_counts(modules).set_index(["module", "operation"])["count"]
    assert ops[("POSIX", "Write")] == 400_000 and ops[("POSIX", "Open")] == 100_000


def test_roots_named_by_the_trace_are_drawn_as_text():
    modules, names = _job(3)
    names.loc[1, "name"] = "/$x^{2}$<script>/f"  # mathtext and markup in a file name
    names.loc[2, "name"] = "/$unbalanced/f"
    roots = js.pd_data_access_by_root(modules, names)
    assert {"/$x^{2}$<script>", "/$unbalanced"} <= set(roots["filesystem_root"])
    assert _size(ss.draw_roots(roots))[0] == 1000


def _dxt_matrices(ranks: int):
    """Rank r reads 1 MiB in bin r % 50 and writes 2 MiB in the last bin, of 200 bins."""
    read, write = np.zeros((ranks, 200)), np.zeros((ranks, 200))
    read[np.arange(ranks), np.arange(ranks) % 50] = 1 << 20
    write[:, -1] = 2 << 20
    return read, write, np.linspace(0.0, 10.0, 201)


def test_dxt_heatmap_figure_is_the_same_size_at_2_and_2048_ranks():
    sizes = {
        ranks: _size(ss.draw_dxt_heatmap(*_dxt_matrices(ranks), "DXT_POSIX"))
        for ranks in (2, 2048, 100_000)
    }
    assert sizes[2] == sizes[2048] == sizes[100_000], sizes
    width, height = sizes[2048]
    assert 1000 <= width <= 1400 and 600 < height < 1000, sizes
