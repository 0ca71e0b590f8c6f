//! iolake_native: a memory-safe Darshan log decoder.
//!
//! The decoder itself (`decode`) is plain Rust with no Python dependency, so the fuzz harness
//! can drive it directly; the `python` feature adds the PyO3 module `iolake_native`, which
//! returns column buffers (little-endian bytes, or `Buffer`s that own Rust's vectors) that
//! `readers/native_darshan.py` wraps into pyarrow arrays without copying.

pub mod batches;
pub mod decode;
pub mod ipc;

#[cfg(feature = "python")]
mod python {
    use crate::decode::{self, DecodeErr, DxtPart, ErrKind, IoOps, Limits, StrCol};
    use pyo3::create_exception;
    use pyo3::exceptions::PyException;
    use pyo3::prelude::*;
    use pyo3::types::{PyBytes, PyDict, PyList};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::{Arc, Mutex};

    create_exception!(
        iolake_native,
        NativeDecodeError,
        PyException,
        "args = (kind, message); kind is corrupt | unsupported | limit | crash"
    );

    /// Values of one column (or one IPC message) that `Buffer` owns.
    enum Store {
        I64(Vec<i64>),
        I32(Vec<i32>),
        F64(Vec<f64>),
        U64(Vec<u64>),
        U8(Vec<u8>),
    }

    /// A read-only buffer of little-endian values handed to Python without a copy: it owns the
    /// Rust vector and exports its bytes through the buffer protocol, so `pyarrow.py_buffer(b)`
    /// (and `memoryview(b)`) read the vector's memory in place. Every export holds a reference
    /// to this object, so the vector lives as long as any Arrow buffer made from it.
    #[pyclass(module = "iolake_native", frozen)]
    struct Buffer {
        store: Store,
    }

    impl Buffer {
        fn i64s(mut v: Vec<i64>) -> Self {
            v.iter_mut().for_each(|x| *x = x.to_le()); // nothing on a little-endian machine
            Buffer { store: Store::I64(v) }
        }

        fn i32s(mut v: Vec<i32>) -> Self {
            v.iter_mut().for_each(|x| *x = x.to_le());
            Buffer { store: Store::I32(v) }
        }

        fn f64s(mut v: Vec<f64>) -> Self {
            v.iter_mut().for_each(|x| *x = f64::from_bits(x.to_bits().to_le()));
            Buffer { store: Store::F64(v) }
        }

        /// Words already laid out as the little-endian bytes they stand for.
        fn words(v: Vec<u64>) -> Self {
            Buffer { store: Store::U64(v) }
        }

        fn bytes(v: Vec<u8>) -> Self {
            Buffer { store: Store::U8(v) }
        }

        /// The start and byte length of the values (a dangling, aligned start when empty).
        fn raw(&self) -> (*const u8, usize) {
            match &self.store {
                Store::I64(v) => (v.as_ptr().cast(), std::mem::size_of_val(v.as_slice())),
                Store::I32(v) => (v.as_ptr().cast(), std::mem::size_of_val(v.as_slice())),
                Store::F64(v) => (v.as_ptr().cast(), std::mem::size_of_val(v.as_slice())),
                Store::U64(v) => (v.as_ptr().cast(), std::mem::size_of_val(v.as_slice())),
                Store::U8(v) => (v.as_ptr(), v.len()),
            }
        }
    }

    #[pymethods]
    impl Buffer {
        /// The length in bytes.
        fn __len__(&self) -> usize {
            self.raw().1
        }

        /// Exports the values read-only (a request for a writable buffer fails). Nothing to free
        /// per export, so no `__releasebuffer__`: releasing the view drops its reference to `slf`.
        unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut pyo3::ffi::Py_buffer, flags: std::os::raw::c_int) -> PyResult<()> {
            let (ptr, len) = slf.get().raw();
            // SAFETY: `view` is the caller's Py_buffer (the protocol's contract). `ptr..ptr+len`
            // is the vector's initialised memory; `Buffer` is frozen and has no method that
            // touches the vector, so it is neither written nor moved nor freed while `slf`
            // lives, and PyBuffer_FillInfo stores a new reference to `slf` in `view.obj` that is
            // only dropped when the view is released. Exported read-only, so no one writes it.
            let rc = unsafe { pyo3::ffi::PyBuffer_FillInfo(view, slf.as_ptr(), ptr as *mut std::ffi::c_void, len as pyo3::ffi::Py_ssize_t, 1, flags) };
            if rc == 0 {
                Ok(())
            } else {
                Err(PyErr::fetch(slf.py()))
            }
        }
    }

    fn buffer<'py>(py: Python<'py>, b: Buffer) -> PyResult<Bound<'py, Buffer>> {
        Bound::new(py, b)
    }

    fn i64_bytes<'py>(py: Python<'py>, v: &[i64]) -> PyResult<Bound<'py, PyBytes>> {
        PyBytes::new_with(py, v.len() * 8, |buf| {
            for (d, x) in buf.chunks_exact_mut(8).zip(v) {
                d.copy_from_slice(&x.to_le_bytes());
            }
            Ok(())
        })
    }

    fn i32_bytes<'py>(py: Python<'py>, v: &[i32]) -> PyResult<Bound<'py, PyBytes>> {
        PyBytes::new_with(py, v.len() * 4, |buf| {
            for (d, x) in buf.chunks_exact_mut(4).zip(v) {
                d.copy_from_slice(&x.to_le_bytes());
            }
            Ok(())
        })
    }

    fn f64_bytes<'py>(py: Python<'py>, v: &[f64]) -> PyResult<Bound<'py, PyBytes>> {
        PyBytes::new_with(py, v.len() * 8, |buf| {
            for (d, x) in buf.chunks_exact_mut(8).zip(v) {
                d.copy_from_slice(&x.to_le_bytes());
            }
            Ok(())
        })
    }

    fn strcol<'py>(py: Python<'py>, s: &StrCol) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        Ok((i32_bytes(py, &s.offsets)?, PyBytes::new(py, &s.data)))
    }

    fn to_py_err(e: DecodeErr) -> PyErr {
        NativeDecodeError::new_err((e.kind.as_str(), e.msg))
    }

    fn panic_err(panic: Box<dyn std::any::Any + Send>) -> PyErr {
        let msg = if let Some(s) = panic.downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = panic.downcast_ref::<String>() {
            s.clone()
        } else {
            "unknown panic".to_string()
        };
        NativeDecodeError::new_err(("crash", format!("decoder panic: {msg}")))
    }

    /// A string column (Arrow i32 offsets, then UTF-8 data) whose row i is `names[idx[i]]`: the
    /// io_ops columns that name a source, an operation or a host, written here in one pass each
    /// instead of gathered by `pyarrow.compute.take` in Python. Runs under `catch_unwind`.
    fn indexed_strings(idx: impl Iterator<Item = usize> + Clone, names: &[&[u8]]) -> Result<(Vec<i32>, Vec<u8>), DecodeErr> {
        let (mut rows, mut total) = (0usize, 0usize);
        for i in idx.clone() {
            // the decoder makes the indices: one out of range is its bug (a "crash" once caught)
            let Some(s) = names.get(i) else { panic!("io_ops name index out of range") };
            rows += 1;
            total += s.len();
        }
        if total > i32::MAX as usize {
            return Err(DecodeErr { kind: ErrKind::Limit, msg: "string column exceeds 2 GiB".into() });
        }
        let mut offsets = Vec::with_capacity(rows + 1);
        let mut data = Vec::with_capacity(total);
        offsets.push(0i32);
        for i in idx {
            data.extend_from_slice(names[i]);
            offsets.push(data.len() as i32);
        }
        Ok((offsets, data))
    }

    /// io_ops' columns as they cross to Python: the numeric ones as decoded, "source", "op" and
    /// "hostname" as string columns. Built without the GIL.
    struct IoOpsCols {
        ops: IoOps,
        strings: [(Vec<i32>, Vec<u8>); 3],
    }

    fn io_ops_cols(mut ops: IoOps) -> Result<IoOpsCols, DecodeErr> {
        const SOURCES: [&[u8]; 2] = [b"DXT_POSIX", b"DXT_MPIIO"];
        const OPS: [&[u8]; 2] = [b"write", b"read"];
        let hosts: Vec<&[u8]> = ops.hostnames.iter().map(|h| h.as_bytes()).collect();
        let strings = [
            indexed_strings(ops.source.iter().map(|&x| x as usize), &SOURCES)?,
            indexed_strings(ops.op.iter().map(|&x| x as usize), &OPS)?,
            indexed_strings(ops.host_idx.iter().map(|&x| x as usize), &hosts)?,
        ];
        // the index columns are spent: free them before the dict is made
        (ops.source, ops.op, ops.host_idx) = (Vec::new(), Vec::new(), Vec::new());
        Ok(IoOpsCols { ops, strings })
    }

    /// The io_ops columns as a dict of little-endian `Buffer`s (+ "n" and "hostnames");
    /// "source", "op" and "hostname" as string columns ("source_str", "op_str", "host_str").
    fn io_ops_dict(py: Python<'_>, c: IoOpsCols) -> PyResult<Bound<'_, PyDict>> {
        let IoOpsCols { ops: t, strings } = c;
        let d = PyDict::new(py);
        d.set_item("n", t.record_id.len())?;
        d.set_item("hostnames", t.hostnames)?;
        d.set_item("record_id", buffer(py, Buffer::i64s(t.record_id))?)?;
        d.set_item("rank", buffer(py, Buffer::i64s(t.rank))?)?;
        d.set_item("seq", buffer(py, Buffer::i64s(t.seq))?)?;
        d.set_item("offset", buffer(py, Buffer::i64s(t.offset))?)?;
        d.set_item("length", buffer(py, Buffer::i64s(t.length))?)?;
        d.set_item("start", buffer(py, Buffer::f64s(t.start))?)?;
        d.set_item("end", buffer(py, Buffer::f64s(t.end))?)?;
        for (key, (offsets, data)) in ["source_str", "op_str", "host_str"].into_iter().zip(strings) {
            d.set_item(key, (buffer(py, Buffer::i32s(offsets))?, buffer(py, Buffer::bytes(data))?))?;
        }
        Ok(d)
    }

    /// The rows of a log's streamed DXT modules (`decode_log(..., stream_dxt_over=...)` lists
    /// them in "dxt_parts"), a batch of at most `batch_rows` rows per `next_batch()`: dicts like
    /// decode_log's "io_ops", `hostnames` being the names so far. Holds a reference to `data`
    /// (the log's bytes) and one chunk of decompressed bytes; the GIL is released while it decodes.
    #[pyclass(module = "iolake_native")]
    struct DxtStream {
        data: Py<PyBytes>,
        batch_rows: usize,
        inner: Mutex<decode::DxtStream>,
    }

    #[pymethods]
    impl DxtStream {
        #[new]
        #[pyo3(signature = (data, comp_type, swapped, parts, batch_rows=1 << 20))]
        fn new(data: Py<PyBytes>, comp_type: u8, swapped: bool, parts: Vec<(u8, u32, u64, u64, u64)>, batch_rows: usize) -> Self {
            let parts = parts.into_iter().map(|(src, ver, off, len, out_len)| DxtPart { src, ver, off, len, out_len }).collect();
            DxtStream { data, batch_rows: batch_rows.max(1), inner: Mutex::new(decode::DxtStream::new(comp_type, swapped, parts)) }
        }

        /// The next batch (a dict of column buffers), or None when the modules are done.
        fn next_batch<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
            let data = self.data.bind(py).as_bytes();
            let (n, inner) = (self.batch_rows, &self.inner);
            // locked without the GIL: a second thread on the same stream waits here, not holding it
            let res = py.detach(|| match inner.lock() {
                Ok(mut s) => Some(catch_unwind(AssertUnwindSafe(|| s.next_batch(data, n)?.map(io_ops_cols).transpose()))),
                Err(_) => None,
            });
            match res {
                Some(Ok(Ok(Some(c)))) => Ok(Some(io_ops_dict(py, c)?)),
                Some(Ok(Ok(None))) => Ok(None),
                Some(Ok(Err(e))) => Err(to_py_err(e)),
                Some(Err(panic)) => Err(panic_err(panic)),
                None => Err(NativeDecodeError::new_err(("crash", "decoder panic: stream poisoned by an earlier panic"))),
            }
        }
    }

    /// Where bronze/apmpi's counter columns come from (`crate::batches::ApmpiLayout`), made once
    /// by the reader from AutoPerf's counter names and passed to every `decode_log`.
    #[pyclass(module = "iolake_native", frozen)]
    struct ApmpiLayout {
        inner: Arc<crate::batches::ApmpiLayout>,
    }

    #[pymethods]
    impl ApmpiLayout {
        #[new]
        fn new(ops: Vec<String>, counters: Vec<(bool, Vec<i64>)>) -> Self {
            ApmpiLayout { inner: Arc::new(crate::batches::ApmpiLayout { ops, counters }) }
        }
    }

    /// Decodes one Darshan log given as bytes. Returns a dict of header facts, job facts and
    /// column buffers; raises NativeDecodeError(kind, message) on any malformed input.
    /// `stream_dxt_over`: when the DXT regions (compressed, together) exceed that many bytes,
    /// they are only scanned here and listed in "dxt_parts" as (source, version, offset, length,
    /// decompressed length) for a `DxtStream`; their bytes count against `stream_cap` (and the
    /// ratio), not `hard_cap`. "jobs_batch", "files_batch" and "lustre_batch" (None without
    /// LUSTRE): those tables as Arrow IPC record batches; with `apmpi_layout`, "apmpi_batch" the
    /// APMPI table as one (None without APMPI ranks) and no "apmpi" columns.
    #[pyfunction]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per limit
    #[pyo3(signature = (data, ratio=None, min_budget=None, hard_cap=None, stream_dxt_over=None, stream_cap=None, apmpi_layout=None))]
    fn decode_log<'py>(
        py: Python<'py>,
        data: &[u8],
        ratio: Option<usize>,
        min_budget: Option<usize>,
        hard_cap: Option<usize>,
        stream_dxt_over: Option<u64>,
        stream_cap: Option<usize>,
        apmpi_layout: Option<Bound<'py, ApmpiLayout>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut limits = Limits::default();
        if let Some(r) = ratio {
            limits.ratio = r;
        }
        if let Some(m) = min_budget {
            limits.min_budget = m;
        }
        if let Some(h) = hard_cap {
            limits.hard_cap = h;
        }
        if let Some(c) = stream_cap {
            limits.stream_cap = c;
        }
        let layout = apmpi_layout.map(|l| Arc::clone(&l.get().inner));
        let result = py.detach(|| {
            catch_unwind(AssertUnwindSafe(|| {
                let mut log = decode::decode_with(data, limits, stream_dxt_over)?;
                let err = |kind, msg: &str| decode::DecodeErr { kind, msg: msg.into() };
                let jobs = crate::batches::jobs_batch(&log).ok_or_else(|| err(ErrKind::Limit, "jobs row strings exceed 2 GiB"))?;
                let apmpi = match (&layout, log.apmpi.take()) {
                    (Some(l), Some(t)) if !t.ids.is_empty() => Some(crate::batches::apmpi_batch(&t, l).ok_or_else(|| err(ErrKind::Corrupt, "APMPI records do not fit the counter layout"))?),
                    (Some(_), _) => None,
                    (None, t) => {
                        log.apmpi = t;
                        None
                    }
                };
                let files = crate::batches::files_batch(&log).ok_or_else(|| err(ErrKind::Limit, "file names table does not fit one record batch"))?;
                let lustre = match log.lustre.take() {
                    Some(t) => Some(crate::batches::lustre_batch(&t).ok_or_else(|| err(ErrKind::Limit, "LUSTRE table does not fit one record batch"))?),
                    None => None,
                };
                let io_ops = log.io_ops.take().map(io_ops_cols).transpose()?;
                Ok((log, [Some(jobs), apmpi, Some(files), lustre], io_ops))
            }))
        });
        let (mut log, [jobs_batch, apmpi_batch, files_batch, lustre_batch], io_ops) = match result {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => return Err(to_py_err(e)),
            Err(panic) => return Err(panic_err(panic)),
        };
        let out = PyDict::new(py);
        out.set_item("version", &log.version)?;
        out.set_item("major", log.major)?;
        out.set_item("minor", log.minor)?;
        out.set_item("magic", log.magic)?;
        out.set_item("comp_type", log.comp_type)?;
        out.set_item("swapped", log.swapped)?;
        out.set_item("partial_flag", log.partial_flag)?;

        let j = &log.job;
        let job = PyDict::new(py);
        job.set_item("uid", j.uid)?;
        job.set_item("start_time_sec", j.start_time_sec)?;
        job.set_item("start_time_nsec", j.start_time_nsec)?;
        job.set_item("end_time_sec", j.end_time_sec)?;
        job.set_item("end_time_nsec", j.end_time_nsec)?;
        job.set_item("nprocs", j.nprocs)?;
        job.set_item("jobid", j.jobid)?;
        job.set_item("run_time", j.run_time)?;
        job.set_item("exe", &j.exe)?;
        job.set_item("metadata", j.metadata.clone())?;
        job.set_item("mounts", j.mounts.clone())?;
        out.set_item("job", job)?;
        let message = |b: Option<Vec<u8>>| b.map(|b| PyBytes::new(py, &b));
        out.set_item("jobs_batch", message(jobs_batch))?;
        out.set_item("apmpi_batch", message(apmpi_batch))?;
        out.set_item("files_batch", message(files_batch))?;
        out.set_item("lustre_batch", message(lustre_batch))?;

        out.set_item("n_names", log.names.len())?;

        let mods = PyList::empty(py);
        for m in &log.modules {
            mods.append((&m.name, m.idx, m.ver, m.len, m.partial))?;
        }
        out.set_item("modules", mods)?;

        let tables = PyList::empty(py);
        for t in std::mem::take(&mut log.counter_tables) {
            let d = PyDict::new(py);
            d.set_item("module", decode::MODULE_NAMES[t.module])?;
            d.set_item("n", t.n)?;
            d.set_item("nints", t.shape.nints)?;
            d.set_item("nflts", t.shape.nflts)?;
            d.set_item("batch", buffer(py, Buffer::words(t.message))?)?;
            tables.append(d)?;
        }
        out.set_item("counter_tables", tables)?;

        match &log.heatmap {
            None => out.set_item("heatmap", py.None())?,
            Some(t) => {
                let d = PyDict::new(py);
                d.set_item("n", t.record_id.len())?;
                d.set_item("record_id", i64_bytes(py, &t.record_id)?)?;
                d.set_item("rank", i64_bytes(py, &t.rank)?)?;
                d.set_item("width", f64_bytes(py, &t.width)?)?;
                d.set_item("nbins", i64_bytes(py, &t.nbins)?)?;
                d.set_item("offsets", i32_bytes(py, &t.offsets)?)?;
                d.set_item("write", i64_bytes(py, &t.write)?)?;
                d.set_item("read", i64_bytes(py, &t.read)?)?;
                out.set_item("heatmap", d)?;
            }
        }

        match &log.apmpi {
            None => out.set_item("apmpi", py.None())?,
            Some(t) => {
                let d = PyDict::new(py);
                d.set_item("n", t.ids.len())?;
                let hdr = t.header.as_ref().map(|h| {
                    (h.id, h.rank, h.magic, h.sync_flag, h.variance_total_mpitime, h.variance_total_mpisynctime)
                });
                d.set_item("header", hdr)?;
                d.set_item("ids", i64_bytes(py, &t.ids)?)?;
                d.set_item("ranks", i64_bytes(py, &t.ranks)?)?;
                d.set_item("counters", i64_bytes(py, &t.counters)?)?;
                d.set_item("fcounters", f64_bytes(py, &t.fcounters)?)?;
                d.set_item("node_name", strcol(py, &t.node_name)?)?;
                out.set_item("apmpi", d)?;
            }
        }

        match &log.apxc {
            None => out.set_item("apxc", py.None())?,
            Some(t) => {
                let d = PyDict::new(py);
                d.set_item("n", t.ids.len())?;
                d.set_item("header", t.header.map(|h| h.to_vec()))?;
                d.set_item("ids", i64_bytes(py, &t.ids)?)?;
                d.set_item("ranks", i64_bytes(py, &t.ranks)?)?;
                d.set_item("location", i64_bytes(py, &t.location)?)?;
                d.set_item("counters", i64_bytes(py, &t.counters)?)?;
                out.set_item("apxc", d)?;
            }
        }

        match io_ops {
            None => out.set_item("io_ops", py.None())?,
            Some(c) => out.set_item("io_ops", io_ops_dict(py, c)?)?,
        }
        let parts: Vec<(u8, u32, u64, u64, u64)> = log.dxt_parts.iter().map(|p| (p.src, p.ver, p.off, p.len, p.out_len)).collect();
        out.set_item("dxt_parts", parts)?;
        out.set_item("regions", log.regions.clone())?;
        out.set_item("damaged", log.damaged.clone())?;
        out.set_item("notes", log.notes.clone())?;
        Ok(out)
    }

    /// Decompresses every region of a log and returns the byte count (benchmark floor).
    #[pyfunction]
    fn inflate_only(py: Python<'_>, data: &[u8]) -> PyResult<usize> {
        match py.detach(|| catch_unwind(AssertUnwindSafe(|| decode::inflate_only(data)))) {
            Ok(Ok(n)) => Ok(n),
            Ok(Err(e)) => Err(to_py_err(e)),
            Err(_) => Err(NativeDecodeError::new_err(("crash", "decoder panic"))),
        }
    }

    #[pymodule]
    fn iolake_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add_function(wrap_pyfunction!(decode_log, m)?)?;
        m.add_function(wrap_pyfunction!(inflate_only, m)?)?;
        m.add_class::<DxtStream>()?;
        m.add_class::<ApmpiLayout>()?;
        m.add_class::<Buffer>()?;
        m.add("NativeDecodeError", m.py().get_type::<NativeDecodeError>())?;
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        let _ = ErrKind::Corrupt;
        Ok(())
    }
}
