from darshan.backend import cffi_backend

from schemas import BRONZE
from schemas.darshan_counters import LUSTRE_COMPONENT_COUNTERS, MODULE_COUNTERS


def test_counters_equal_pydarshan_names():
    for table, (module, counters, fcounters) in MODULE_COUNTERS.items():
        assert list(counters) == cffi_backend.counter_names(module), table
        assert list(fcounters) == cffi_backend.fcounter_names(module), table
    assert list(LUSTRE_COMPONENT_COUNTERS) == cffi_backend.counter_names("LUSTRE_COMP")


def test_module_tables_carry_every_counter_as_a_typed_column():
    spec = BRONZE["posix"]
    types = {f.name: f.dataType.typeName() for f in spec.struct.fields}
    assert types["POSIX_BYTES_READ"] == "long"
    assert types["POSIX_F_READ_TIME"] == "double"
    assert spec.columns[:4] == ["log_id", "job_month", "record_id", "rank"]
    assert "log_id" not in spec.decoded_arrow_schema.names
