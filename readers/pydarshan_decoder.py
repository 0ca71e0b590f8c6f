"""The reference decoder: pydarshan 3.5.0 (libdarshan-util through cffi) -> bronze Arrow tables.

It is the oracle the native decoder is checked against, and the fallback decoder of ingest.
It runs inside `readers.sandbox` worker processes because libdarshan-util can crash the
process on hostile input. It cannot read bzip2 logs (the wheel is built without bzip2) nor
Darshan 2.x logs; those raise `UnsupportedFormat` before the C library is called.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from readers.base import Decoded, DecodeError, UnsupportedFormat
from readers.darshan_header import peek_header
from readers.tables import attach_mounts, build_table, heatmap_module, module_table_rows
from schemas import DARSHAN_MODULE_TABLE

DECODER = "pydarshan-3.5.0"
SKIPPED_MODULES = ("HEATMAP", "APMPI", "APXC", "MDHIM", "BG/Q")
AUTOPERF_MODULES = ("APMPI", "APXC")
# AutoPerf's readers in libdarshan-util (darshan-apmpi-logutils.c, darshan-apxc-logutils.c) take
# the first record they return in a process for the module's header record (a function-static
# `first_rec` flag) and never reset it: in a worker that has read one log's APMPI, the next log's
# header is read as a rank record (one record short, every field shifted). The fallback decodes
# many logs per worker process, so it leaves them to the native decoder.
AUTOPERF_NOTE = (
    "module {mod} not decoded by the pydarshan decoder: libdarshan-util's AutoPerf reader reads "
    "only the first log of a process correctly (its header-record flag is a static variable); "
    "the native decoder fills bronze/{table}"
)


def _backend():
    from darshan.backend import cffi_backend

    return cffi_backend


def decode(path: str) -> Decoded:
    with open(path, "rb") as fh:
        facts = peek_header(fh.read(64))
    if facts.compression == "bzip2":
        raise UnsupportedFormat("bzip2-compressed log: not supported by the pydarshan decoder")
    b = _backend()
    log = b.log_open(path)
    if log["handle"] == b.ffi.NULL:
        raise DecodeError("darshan_log_open failed (libdarshan-util could not read the header)")
    try:
        return _decode_open_log(b, log, facts)
    finally:
        b.log_close(log)


def _decode_open_log(b, log, facts) -> Decoded:
    job = b.log_get_job(log)
    mounts = [{"mount_point": p, "fs_type": t} for p, t in b.log_get_mounts(log)]
    modules = b.log_get_modules(log)
    names = b.log_get_name_records(log)
    tables: dict[str, pa.Table] = {}
    notes: list[str] = []

    meta = {str(k): str(v) for k, v in job["metadata"].items()}
    tables["jobs"] = build_table(
        "jobs",
        {
            "jobid": [job["jobid"]],
            "uid": [job["uid"]],
            "nprocs": [job["nprocs"]],
            "start_time_sec": [job["start_time_sec"]],
            "start_time_nsec": [job["start_time_nsec"]],
            "end_time_sec": [job["end_time_sec"]],
            "end_time_nsec": [job["end_time_nsec"]],
            "run_time_s": [float(job["run_time"])],
            "exe": [b.log_get_exe(log)],
            "metadata": [list(meta.items())],
            "log_ver": [job["log_ver"]],
            "mounts": [mounts],
        },
    )
    ids = np.fromiter(names.keys(), dtype=np.uint64, count=len(names)).view(np.int64)
    tables["files"] = attach_mounts(
        build_table("files", {"record_id": ids, "name": list(names.values())}), mounts
    )

    for mod, _info in modules.items():
        table = DARSHAN_MODULE_TABLE.get(mod)
        if mod == "LUSTRE":
            tables["lustre"] = _lustre(b, log)
        elif mod == "HEATMAP":
            tables["heatmap"] = _heatmap(b, log, names)
        elif mod in ("DXT_POSIX", "DXT_MPIIO"):
            ops = _dxt(b, log, mod)
            tables["io_ops"] = (
                ops if "io_ops" not in tables else pa.concat_tables([tables["io_ops"], ops])
            )
        elif table is not None:
            recs = []
            rec = b.log_get_record(log, mod, dtype="numpy")
            while rec is not None:
                recs.append((rec["id"], rec["rank"], rec["counters"], rec["fcounters"]))
                rec = b.log_get_record(log, mod, dtype="numpy")
            tables[table] = module_table_rows(table, recs)
        elif mod in AUTOPERF_MODULES:
            notes.append(AUTOPERF_NOTE.format(mod=mod, table=mod.lower()))
        else:
            notes.append(f"module {mod} skipped: not decoded into bronze")

    return Decoded(
        tables=tables,
        format="darshan",
        format_version=job["log_ver"] or facts.format_version,
        writer_version=meta.get("lib_ver"),
        compression=facts.compression,
        decoder=DECODER,
        modules=sorted(modules),
        partial_modules=sorted(m for m, i in modules.items() if i["partial_flag"]),
        modules_info=[
            {"module": m, "version": int(i["ver"]), "region_bytes": int(i["len"])}
            for m, i in sorted(modules.items(), key=lambda kv: kv[1]["idx"])
        ],
        notes=notes,
    )


def _heatmap(b, log, names: dict) -> pa.Table:
    """HEATMAP records as pydarshan's `DarshanReport.read_all_heatmap_records` reads them."""
    cols: dict[str, list] = {
        k: []
        for k in (
            "record_id",
            "module",
            "rank",
            "bin_width_s",
            "nbins",
            "read_bytes",
            "write_bytes",
        )
    }
    rec = b._log_get_heatmap_record(log)
    while rec is not None:
        rid = int(np.uint64(rec["id"]).view(np.int64))
        cols["record_id"].append(rid)
        cols["module"].append(heatmap_module(names.get(rec["id"]), rid))
        cols["rank"].append(int(rec["rank"]))
        cols["bin_width_s"].append(float(rec["bin_width_seconds"]))
        cols["nbins"].append(int(rec["nbins"]))
        cols["read_bytes"].append([int(x) for x in rec["read_bins"]])
        cols["write_bytes"].append([int(x) for x in rec["write_bins"]])
        rec = b._log_get_heatmap_record(log)
    return build_table("heatmap", cols)


def _lustre(b, log) -> pa.Table:
    from schemas.darshan_counters import LUSTRE_COMPONENT_COUNTERS

    cols: dict[str, list] = {"record_id": [], "rank": [], "component": []}
    cols.update({c: [] for c in LUSTRE_COMPONENT_COUNTERS})
    cols["LUSTRE_POOL_NAME"] = []
    cols["LUSTRE_OST_IDS"] = []
    rec = b.log_get_record(log, "LUSTRE", dtype="numpy")
    while rec is not None:
        rid = int(np.uint64(rec["id"]).view(np.int64))
        for i, comp in enumerate(rec["components"]):
            cols["record_id"].append(rid)
            cols["rank"].append(int(rec["rank"]))
            cols["component"].append(i)
            for name, v in zip(LUSTRE_COMPONENT_COUNTERS, comp["counters"]):
                cols[name].append(int(v))
            cols["LUSTRE_POOL_NAME"].append(comp["pool_name"])
            cols["LUSTRE_OST_IDS"].append([int(x) for x in comp["ost_ids"]])
        rec = b.log_get_record(log, "LUSTRE", dtype="numpy")
    return build_table("lustre", cols)


def _dxt(b, log, mod: str) -> pa.Table:
    cols: dict[str, list] = {
        k: []
        for k in (
            "record_id",
            "rank",
            "seq",
            "op",
            "offset",
            "length",
            "start_s",
            "end_s",
            "hostname",
        )
    }
    rec = b.log_get_dxt_record(log, mod, dtype="dict")
    while rec is not None:
        rid = int(np.uint64(rec["id"]).view(np.int64))
        for op, key in (("write", "write_segments"), ("read", "read_segments")):
            for seq, seg in enumerate(rec[key]):
                cols["record_id"].append(rid)
                cols["rank"].append(int(rec["rank"]))
                cols["seq"].append(seq)
                cols["op"].append(op)
                cols["offset"].append(int(seg["offset"]))
                cols["length"].append(int(seg["length"]))
                cols["start_s"].append(float(seg["start_time"]))
                cols["end_s"].append(float(seg["end_time"]))
                cols["hostname"].append(rec["hostname"])
        rec = b.log_get_dxt_record(log, mod, dtype="dict")
    n = len(cols["rank"])
    cols["source"] = [mod] * n
    return build_table("io_ops", cols)
