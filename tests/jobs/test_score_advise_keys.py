"""Score and advise run their models once per distinct model input (iolake/per_key.py) and must give
the rows they gave running them once per file: both ways on the same files, with real models
registered in a real MLflow registry (SQLite in a temporary folder) and run by real Spark.

The files share keys across logs, records and sizes, and some keys have null inputs (rw_per_open,
nprocs), which an equality join that is not null-safe would drop."""

from __future__ import annotations

import pytest

from features import advice, what_if
from schemas import GOLD
from tests.models.tiny import row
from tests.support.frames import frame

KIB, MIB = 1 << 10, 1 << 20

KEYS = [  # (feature row, tier): six model inputs
    (row(0), "pfs"),
    (row(1), "bb"),
    (row(2, rw_per_open=None), "pfs"),
    (row(3, nprocs=None), "bb"),
    (
        row(
            4, rw_per_open=None, nprocs=None, interface="MPI-IO", file_per_process=False, n_ranks=4
        ),
        "pfs",
    ),
    (
        row(
            5,
            interface="MPI-IO",
            collective=True,
            file_per_process=False,
            n_ranks=8,
            nprocs=8,
            transfer_size=64 * KIB,
        ),
        "bb",
    ),
]


def _files(spark):
    """Every key in three logs, under different record ids, names and byte counts; log A has each key
    twice: 24 files, 6 keys."""
    rows = []
    for k, (feats, tier) in enumerate(KEYS):
        for j, log in enumerate(("A", "A", "B", "C")):
            rid = 100 * k + j
            rows.append(
                {
                    **feats,
                    "log_id": log,
                    "record_id": rid,
                    "file_name": f"/{tier}/{log}/f{rid}",
                    "tier": tier,
                    "opens": 1,
                    "reads": j,
                    "writes": 4,
                    "io_type_source": "counters",
                    "bytes_read": j * KIB,
                    "bytes_written": (k + 1) * MIB + j,
                    "bandwidth_mib_s": 100.0 + rid,
                }
            )
    return frame(spark, "file_features", rows)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A lightgbm bandwidth model (tiers bb, pfs; it takes null inputs) and a lightgbm placement model,
    registered as version 1 of their names; the registry is the previous one again afterwards."""
    import mlflow
    import numpy as np

    from models import bandwidth, placement, pyfunc, tracking
    from schemas.placement_labels import FEATURES
    from tests.models.tiny import bandwidth_frame, placement_frame

    tmp = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{tmp}/mlflow.db"
    old = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    exp = mlflow.create_experiment("per-key", artifact_location=(tmp / "artifacts").as_uri())
    Xb, bw = bandwidth_frame(40)
    Xp, yp = placement_frame(40)
    fitted = {
        "t-bandwidth": pyfunc.Bandwidth(
            bandwidth.build_estimator("lightgbm").fit(Xb, np.log(bw)),
            bandwidth.FILE_FEATURES,
            ("bb", "pfs"),
        ),
        "t-placement": pyfunc.Placement(
            placement.build_estimator("lightgbm").fit(Xp, yp), FEATURES
        ),
    }
    out = {}
    for name, model in fitted.items():
        with mlflow.start_run(experiment_id=exp):
            info = tracking.log_model(model, Xb if name == "t-bandwidth" else Xp)
        mv = mlflow.register_model(info.model_uri, name)
        out[name] = (f"models:/{name}/{mv.version}", str(mv.version))
    yield out
    mlflow.set_tracking_uri(old[0])
    mlflow.set_registry_uri(old[1])


def _plain(r) -> tuple:
    """A row as comparable values: maps as sorted items."""
    return tuple(tuple(sorted(v.items())) if isinstance(v, dict) else v for v in r)


def _rows(df, drop=()) -> list[tuple]:
    return sorted((_plain(r) for r in df.drop(*drop).collect()), key=lambda t: (t[0], t[2]))


@pytest.mark.parametrize("with_placement", [False, True], ids=["bandwidth", "placement_picks_tier"])
def test_what_if_rows_per_key_equal_per_file(spark, models, with_placement):
    from pyspark.testing import assertSchemaEqual

    files = _files(spark)
    bw = advice.ship_model(spark, models["t-bandwidth"][0])
    pl = advice.ship_model(spark, models["t-placement"][0]) if with_placement else None
    space = what_if.Space(
        tiers=("bb", "pfs"), dimensions=("tier", "transfer_size", "api"), min_speedup=1.1
    )
    new = advice.what_if_rows(files, space, bw, pl)
    old = advice.what_if_rows(files, space, bw, pl, per_key=False)
    assertSchemaEqual(new.schema, old.schema)
    assertSchemaEqual(new.schema, advice.WHAT_IF_SCHEMA)
    got, want = _rows(new), _rows(old)
    assert len(got) == len(want) == 24
    assert got == want
    # the answers differ between keys (a join matching the wrong key would show) and null keys got theirs
    assert len({(r.current, r.now) for r in new.collect()}) == len(KEYS)
    nulls = {
        r.record_id
        for r in new.where("record_id div 100 in (2, 3, 4)").where("now is not null").collect()
    }
    assert nulls == {100 * k + j for k in (2, 3, 4) for j in range(4)}
    assert {r.bytes for r in new.where("record_id = 503").collect()} == {6 * MIB + 3 + 3 * KIB}


@pytest.mark.parametrize(
    "table,name",
    [("placement_predictions", "t-placement"), ("bandwidth_predictions", "t-bandwidth")],
)
def test_score_predict_per_key_equals_per_row(spark, models, table, name):
    from jobs.score import predict

    # the models' signatures type nprocs as a long that is never null (train's would, from rows that all
    # have it), and MLflow refuses a null there either way: score gets the keys without a null nprocs
    files = _files(spark).where("nprocs is not null")
    uri, version = models[name]
    spec = GOLD[table]
    new = predict(spark, files, uri, name, version, spec)
    old = predict(spark, files, uri, name, version, spec, per_key=False)
    assert new.schema == old.schema
    got, want = _rows(new, ["scored_at"]), _rows(old, ["scored_at"])
    assert len(got) == len(want) == 16  # 4 keys, one with a null rw_per_open
    assert got == want
    assert (
        new.where(
            f"scored_at is null or model_name != '{name}' or model_version != '{version}'"
        ).count()
        == 0
    )
    out = "predicted_tier" if table == "placement_predictions" else "predicted_bandwidth_mib_s"
    assert new.where(f"{out} is null").count() == 0  # every file scored, null keys too
