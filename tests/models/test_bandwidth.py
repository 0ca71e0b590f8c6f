import numpy as np
import pandas as pd
import pytest

from models import bandwidth
from tests.models.tiny import bandwidth_frame


@pytest.mark.parametrize("name", bandwidth.REGRESSORS)
def test_build_estimator_fits_log_bandwidth(name):
    X, bw = bandwidth_frame()
    est = bandwidth.build_estimator(name, seed=1).fit(X, np.log(bw))
    m = bandwidth.metrics(bw, np.exp(est.predict(X)))
    assert m["r2_log"] > 0.5, m


def test_metrics_perfect_prediction():
    assert bandwidth.metrics([10.0, 100.0], [10.0, 100.0]) == {
        "mdape_pct": 0.0,
        "mape_pct": 0.0,
        "r2": 1.0,
        "r2_log": 1.0,
        "rmse_log": 0.0,
    }


def test_metrics_mape_and_raw_r2_by_hand():
    m = bandwidth.metrics([100.0, 200.0], [150.0, 200.0])
    assert m["mape_pct"] == pytest.approx(25.0)  # (50% + 0%) / 2
    assert m["r2"] == pytest.approx(1 - 2500.0 / 5000.0)  # SS_res 50², SS_tot 2 × 50²


def test_median_rule_is_the_training_median_of_the_tier():
    X_train = pd.DataFrame({"tier": ["bb", "bb", "bb", "pfs"]})
    X_test = pd.DataFrame({"tier": ["bb", "pfs", "lustre"]})
    pred = bandwidth.median_rule(X_train, [1.0, 3.0, 10.0, 7.0], X_test)
    assert list(pred) == [3.0, 7.0, 5.0]  # lustre: the median of all four


def test_fit_and_evaluate_reports_the_median_rule_beside_each_model():
    from models import evaluation

    X, bw = bandwidth_frame()
    folds = evaluation.splits(np.arange(len(X)) // 3, 4, 0.25, seed=0)
    r = bandwidth.fit_and_evaluate("random_forest", X, bw, folds)
    assert {
        "mdape_pct_mean",
        "mape_pct_mean",
        "r2_mean",
        "r2_log_mean",
        "baseline_mdape_pct_mean",
    } <= set(r)
    assert r["r2_log_mean"] > r["baseline_r2_log_mean"]


@pytest.mark.parametrize("name", ["random_forest", "gradient_boosting", "lightgbm"])
def test_fit_and_evaluate_in_threads_gives_the_same_scores_as_one_split_at_a_time(name):
    """`n_jobs` fits several splits at once, in threads (models.cv_jobs): every figure, the sign test's
    counts and the pooled R² included, equals the one-at-a-time run's, bit for bit."""
    from models import evaluation

    X, bw = bandwidth_frame()
    folds = evaluation.splits(np.arange(len(X)) // 3, 5, 0.25, seed=1)
    one = bandwidth.fit_and_evaluate(name, X, bw, folds, seed=3)
    assert bandwidth.fit_and_evaluate(name, X, bw, folds, seed=3, n_jobs=2) == one
    assert bandwidth.fit_and_evaluate(name, X, bw, folds, seed=3, n_jobs=-1) == one


def test_metrics_mdape_is_median_relative_error():
    assert bandwidth.metrics([100.0, 100.0, 100.0], [110.0, 50.0, 100.0])[
        "mdape_pct"
    ] == pytest.approx(10.0)


def test_closer_counts_each_metric_in_its_own_error():
    """By hand, truth 100 on every row: prediction 300 is 200% off (log 1.10), rule 10 is 90% off
    (log 2.30): closer in log terms, farther in percentage. Prediction 50 against rule 150: 50% vs
    50% (a tie in APE), |log| 0.69 vs 0.41 (rule closer). Prediction 100 against rule 90: model closer."""
    from models.bandwidth import closer

    got = closer([100.0, 100.0, 100.0], [300.0, 50.0, 100.0], [10.0, 150.0, 90.0])
    assert got == {"mdape_pct_mean": (1, 1), "r2_log_mean": (2, 1)}


def test_bytes_per_open_is_transfer_size_times_requests_per_open():
    from models.pyfunc import _bytes_per_open

    got = _bytes_per_open(pd.DataFrame({"transfer_size": [4096, None], "rw_per_open": [16.0, 2.0]}))
    assert got.bytes_per_open.iloc[0] == 65536.0 and np.isnan(got.bytes_per_open.iloc[1])
    assert list(got.rw_per_open) == [16.0, 2.0]  # the input is left as it was


def _size_ladders(files):
    """Every (file row, tier) moved to each transfer size the what-if offers it by default (its own
    and larger, up to the bytes it moves per open), at the same bytes per open
    (features/what_if.apply): rows and a ladder id."""
    from features import what_if

    space = what_if.Space(dimensions=("transfer_size",))
    rows, ladder = [], []
    for i, r in enumerate(files.to_dict("records")):
        now = what_if.setting(r)
        for s in what_if.options(r, space)["transfer_size"]:  # sorted
            rows.append(what_if.apply(r, dict(now, transfer_size=s)))
            ladder.append(i)
    return pd.DataFrame(rows), np.asarray(ladder)


def _decreases(est, rows, ladder):
    pred = est.predict(rows[list(bandwidth.FILE_FEATURES)])
    same = ladder[1:] == ladder[:-1]
    return int(np.sum(same & (np.diff(pred) < -1e-9)))


@pytest.mark.parametrize("name", bandwidth.MONOTONE)
def test_file_model_never_predicts_larger_requests_at_the_same_bytes_slower(name):
    """On the shipped IOR sweep table: every configuration on both tiers, its request size raised
    step by step at the same bytes per open; the constrained model's prediction never falls, the
    unconstrained one's does somewhere (so the check can fail)."""
    from models import benchmarks

    files = benchmarks.file_rows(pd.read_csv(benchmarks.SHIPPED["iosweep"]))
    X, y = files[list(bandwidth.FILE_FEATURES)], np.log(files.bandwidth_mib_s.to_numpy(float))
    rows, ladder = _size_ladders(X)
    assert len(set(ladder)) == len(X) and len(rows) > 1.5 * len(X)
    assert _decreases(bandwidth.build_estimator(name, seed=0).fit(X, y), rows, ladder) == 0
    assert (
        _decreases(bandwidth.build_estimator(name, seed=0, monotone=False).fit(X, y), rows, ladder)
        > 0
    )


def test_reference_estimator_reads_the_benchmark_parameters_and_the_tier():
    from models import evaluation

    rng = np.random.default_rng(5)
    n = 80
    params = pd.DataFrame(
        {
            "tier": rng.choice(["bb", "pfs"], n),
            "ior_api": rng.choice(["POSIX", "MPIIO"], n),
            "ior_block_size": rng.choice([1 << 10, 1 << 16, 1 << 20], n),
            "ior_fsync": rng.integers(0, 2, n),
        }
    )
    # bandwidth from the parameters alone: x4 on bb, x2 for POSIX, /3 with fsync, and the block size
    bw = (
        100.0
        * np.where(params.tier == "bb", 4, 1)
        * np.where(params.ior_api == "POSIX", 2, 1)
        / np.where(params.ior_fsync == 1, 3, 1)
        * np.log2(params.ior_block_size)
    )
    folds = evaluation.splits(np.arange(n) // 2, 5, 0.25, seed=1)
    r = bandwidth.fit_and_evaluate(
        "reference_true_params",
        params,
        pd.Series(bw),
        folds,
        estimator=bandwidth.reference_estimator(params, "random_forest"),
    )
    assert r["model"] == "reference_true_params"
    assert r["mdape_pct_mean"] < 15 < r["baseline_mdape_pct_mean"], r
    assert r["r2_log_mean"] > 0.9 > r["baseline_r2_log_mean"], r
