"""`IOFrame.dxt_heatmap` (features/dxt_heatmap.py) on the lake against pydarshan 3.5.0.

The lake is `tests.support.lakes.pydarshan_lake` (every log of ../shared/data/darshan pydarshan
reads, shared with test_job_summary_pydarshan.py). Then:

- on every such log with DXT, each module, each of read / write / read+write at 1 and 10 bins
  over the job's run time and over the last segment (`get_heatmap_df`'s default), and
  read+write at 200 bins over the run time (as pydarshan's job summary draws it; the 200-bin
  frames of one op are the slow part of pydarshan, equal in the benchmark log's run of every
  case): the matrix equals pydarshan's `get_heatmap_df` on the segments
  pydarshan's `get_aggregate_data` reads, and those segments equal the lake's;
- the values pydarshan's test suite hard-codes in `darshan-util/pydarshan/darshan/tests/
  test_heatmap_handling.py` (darshan-hpc/darshan 3.5.0), copied below, for the logs the shared
  corpus holds. The test prints how many it reproduces (docs/benchmarks.md logs the figure).
"""

from __future__ import annotations

import numpy as np
import pytest

from features import dxt_heatmap as dh
from tests.support.data import need

pytestmark = pytest.mark.slow  # the shared lake (~110 logs), then pydarshan on each DXT log

SIMPLE, DXT, IOR = "sample-dxt-simple.darshan", "dxt.darshan", "ior_hdf5_example.darshan"

# ---- test_heatmap_handling.py's values (length, start_time, end_time, rank) ---------------------
# test_get_single_df_dict (ops read+write and write: the same write frame) and test_get_aggregate_data
SIMPLE_WRITES = [
    [40, 0.10337884305045009, 0.10338771319948137, 0],
    [4000, 0.10421665315516293, 0.10423145908862352, 0],
]
# test_get_aggregate_data: ior_hdf5_example.darshan, DXT_MPIIO, write
IOR_MPIIO_WRITES = [
    [262144, 0.029964923858642578, 0.033110857009887695, 0],
    [262144, 0.03313708305358887, 0.03374886512756348, 0],
    [262144, 0.03376293182373047, 0.03420686721801758, 0],
    [262144, 0.03422093391418457, 0.1820380687713623, 0],
    [40, 0.22188901901245117, 0.23144793510437012, 0],
    [96, 0.2314610481262207, 0.23147892951965332, 0],
    [96, 0.23216795921325684, 0.2321760654449463, 0],
    [262144, 0.0299680233001709, 0.03130483627319336, 1],
    [262144, 0.03133583068847656, 0.18091988563537598, 1],
    [262144, 0.1809389591217041, 0.18172383308410645, 1],
    [262144, 0.18174386024475098, 0.18261194229125977, 1],
    [544, 0.2218928337097168, 0.23146295547485352, 1],
    [120, 0.23146700859069824, 0.23148202896118164, 1],
    [262144, 0.0299680233001709, 0.03239917755126953, 2],
    [262144, 0.03243207931518555, 0.03294110298156738, 2],
    [262144, 0.03295707702636719, 0.1809689998626709, 2],
    [262144, 0.18098902702331543, 0.2218320369720459, 2],
    [272, 0.22189807891845703, 0.23153114318847656, 2],
    [262144, 0.029965877532958984, 0.031455039978027344, 3],
    [262144, 0.03148388862609863, 0.03171586990356445, 3],
    [262144, 0.03172898292541504, 0.03197503089904785, 3],
    [262144, 0.03198695182800293, 0.032212018966674805, 3],
    [328, 0.2218940258026123, 0.23151302337646484, 3],
]
# test_get_heatmap_df: (log, xbins, ops) -> the matrix (DXT_POSIX, max_time: the last segment)
_W10 = [
    [0, 808091.3650729951, 41175.65189967951, 41175.6518996795, 41175.6518996795]
    + [41175.65189967952, 41175.65189967947, 34606.37542860738, 0, 232],
    [0, 288603.1671221, 40689.00335231, 40689.00335231, 40689.00335231]
    + [40689.00335231, 40689.00335231, 556527.81611634, 0, 664],
    [0, 548158.6819154, 41120.86590861, 41120.86590861, 41120.86590861]
    + [41120.86590861, 41120.86590861, 63152.77796803, 149027.37037175, 82904.84020176],
    [0, 1048576, 0, 0, 0, 0, 0, 0, 0, 328],
]
_RW10 = [
    [0, 827385.0734944909, 50822.506110427385, 50822.50611042739, 50822.50611042739]
    + [50822.50611042737, 17900.90206379957, 30.830417529761142, 1051289.1695824703, 0],
    [0, 307668.84624124144, 50221.842911882275, 50221.84291188228, 50221.84291188228]
    + [50221.84291188226, 540019.7821112294, 418.49887595643366, 108234.18114341467]
    + [942483.3199806289],
    [0, 567426.7192208751, 50754.88456134755, 50754.88456134756, 50754.88456134756]
    + [50754.884561347535, 141846.72456250372, 136490.77078712088, 1050536.24718411, 0],
    [0, 1048576, 0, 0, 0, 0, 0, 251.0322619047617, 1050548.9677380952, 0],
]
RW, R, W = ("read", "write"), ("read",), ("write",)
HEATMAPS = {
    (SIMPLE, 1, RW): [[4040]] + [[0]] * 15,
    (SIMPLE, 4, RW): [[0, 0, 0, 4040]] + [[0] * 4] * 15,
    (SIMPLE, 10, RW): [[0] * 9 + [4040]] + [[0] * 10] * 15,
    (DXT, 1, R): [[22517726]],
    (DXT, 4, R): [[10214363, 0, 8070137, 4233226]],
    (DXT, 10, R): [[10214363, 0, 0, 0, 0, 0, 8070137, 0, 0, 4233226]],
    (DXT, 1, W): [[13021781]],
    (DXT, 4, W): [[4381, 0, 10915913, 2101487]],
    (DXT, 10, W): [[4381, 0, 0, 0, 0, 0, 10915913, 0, 0, 2101487]],
    (DXT, 1, RW): [[35539507]],
    (DXT, 4, RW): [[10218744, 0, 18986050, 6334713]],
    (DXT, 10, RW): [[10218744, 0, 0, 0, 0, 0, 18986050, 0, 0, 6334713]],
    (IOR, 1, R): [[1051088], [1050472], [1050472], [1050472]],
    (IOR, 10, R): [
        [0] * 8 + [1051088, 0],
        [0] * 8 + [107988.68001937, 942483.31998063],
        [0] * 8 + [1050472, 0],
        [0] * 8 + [1050472, 0],
    ],
    (IOR, 1, W): [[1048808], [1049240], [1048848], [1048904]],
    (IOR, 10, W): _W10,
    (IOR, 1, RW): [[2099896], [2099712], [2099320], [2099376]],
    (IOR, 10, RW): _RW10,
}
# test_get_heatmap_df's sums of the whole matrix
SUMS = {(SIMPLE, RW): 4040, (DXT, RW): 35539507, (DXT, R): 22517726, (DXT, W): 13021781}
SUMS |= {(IOR, RW): 8398304, (IOR, R): 4202504, (IOR, W): 4195800}
# (bins, max_time, IOFrame's max_time): the job summary's 200 bins over the run time; 1 and 10
# bins over the run time and over the last segment (get_heatmap_df's default)
CASES = [(1, "run_time", "run_time"), (1, None, "last_segment"), (10, "run_time", "run_time")]
CASES += [(10, None, "last_segment"), (200, "run_time", "run_time")]
# the values above as test_heatmap_handling.py asserts them: 2 x 2 frames of 8 (the writes of
# sample-dxt-simple), 92 (ior_hdf5's MPI-IO writes), 417 matrix cells, 18 sums
SUITE_VALUES = 559


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    from tests.support.lakes import pydarshan_lake

    return pydarshan_lake(spark, tmp_path_factory)


def _frame(lake, name):
    from apps.analysis import IOFrame

    log_id = lake["ids"].get(name)
    need(log_id is not None, f"needs {name} in ../shared/data/darshan")
    return IOFrame.from_lake(lake["lake"], log_id=log_id)


def _matrix(h):
    return h.pivot(index="rank", columns="bin", values="bytes").to_numpy()


def _rows(segs):
    """Segments as sorted rows (pydarshan lists them record by record, the lake by rank)."""
    return sorted(map(tuple, np.asarray(segs, dtype=float).tolist()))


def test_dxt_heatmap_equals_pydarshan_on_every_dxt_log(lake):
    import darshan
    from darshan.experimental.plots import heatmap_handling as hh

    frames = {p.name: _frame(lake, p.name) for p in lake["logs"]}
    logs = [p for p in lake["logs"] if (frames[p.name].ops["source"] != "RECORDER").any()]
    need(len(logs) > 0, "needs the DXT logs of ../shared/data/darshan")
    cells, maps = 0, 0
    for path in logs:
        f = frames[path.name]
        with darshan.DarshanReport(str(path)) as report:
            nprocs = report.metadata["job"]["nprocs"]
            run_time = report.metadata["job"]["run_time"]
            for module in dh.MODULES:
                if module not in report.records:
                    assert f.dxt_heatmap(module=module).empty, (path.name, module)
                    continue
                for ops in (R, W, RW):
                    try:
                        agg = hh.get_aggregate_data(report=report, mod=module, ops=list(ops))
                    except ValueError:  # no such segments
                        assert f.dxt_heatmap(module=module, ops=ops).empty, (path.name, module)
                        continue
                    ours = dh.segments(f.ops, module, ops)
                    assert _rows(ours) == _rows(agg[dh.SEGMENT_COLUMNS]), (path.name, module, ops)
                    for bins, max_time, until in CASES:
                        if bins == 200 and ops != RW:
                            continue  # the job summary's map is of both; 1 and 10 bins split them
                        if max_time == "run_time":
                            max_time = run_time
                        want = hh.get_heatmap_df(agg.copy(), bins, nprocs, max_time)
                        got = _matrix(
                            f.dxt_heatmap(bins=bins, module=module, ops=ops, max_time=until)
                        )
                        np.testing.assert_allclose(
                            got, want.to_numpy(), rtol=1e-9, atol=1e-6,
                            err_msg=f"{path.name} {module} {ops} {bins} {until}",
                        )  # fmt: skip
                        cells += got.size
                        maps += 1
    print(f"DXT heat maps equal to pydarshan's on {len(logs)} logs: {maps} maps, {cells} cells")
    assert maps > 400


def test_dxt_heatmap_reproduces_test_heatmap_handling(lake):
    reproduced = 0
    simple = _frame(lake, SIMPLE)
    for ops in (RW, W):  # test_get_single_df_dict and test_get_aggregate_data
        for _ in range(2):  # both tests assert this frame for both op lists
            assert _rows(dh.segments(simple.ops, "DXT_POSIX", ops)) == _rows(SIMPLE_WRITES)
            reproduced += 8
    for module in ("DXT_POSIX", "DXT_MPIIO"):  # no reads: pydarshan raises "No data available"
        assert dh.segments(simple.ops, module, R).empty
    ior = _frame(lake, IOR)
    assert _rows(dh.segments(ior.ops, "DXT_MPIIO", W)) == _rows(IOR_MPIIO_WRITES)
    reproduced += 4 * len(IOR_MPIIO_WRITES)
    frames = {name: _frame(lake, name) for name in (SIMPLE, DXT, IOR)}
    for (name, bins, ops), want in HEATMAPS.items():
        h = frames[name].dxt_heatmap(bins=bins, ops=ops, max_time="last_segment")
        got = _matrix(h)
        # numpy's assert_allclose defaults, with which pydarshan's test compares
        np.testing.assert_allclose(got, np.array(want, dtype=float), rtol=1e-7)
        reproduced += got.size
        if (name, ops) in SUMS:
            assert got.sum() == pytest.approx(SUMS[name, ops], rel=1e-12), (name, bins, ops)
            reproduced += 1
    print(f"test_heatmap_handling.py: {reproduced} of {SUITE_VALUES} values reproduced")
    assert reproduced == SUITE_VALUES
