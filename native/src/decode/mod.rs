//! A memory-safe decoder for Darshan 3.x logs (log format 3.00 ... 3.41).
//!
//! Written from the format facts in darshan-util (darshan-log-format.h, darshan-logutils.c and
//! the per-module `*-logutils.c` up-conversions). The goal is bit-for-bit agreement with
//! libdarshan-util 3.5.0 (what pydarshan 3.5.0 wraps) on every log it reads, including its
//! quirks, while never trusting a single length, count or offset in the file:
//!
//! * every read is bounds-checked against the decompressed region;
//! * decompressed sizes are capped (`Limits`), so a decompression bomb is a `Limit` error;
//! * record counts are bounded by the bytes actually present, never by counts in the file.
//!
//! Layout (all integers in the writer's byte order; `swapped` says it differs from ours):
//! an uncompressed header (version string, magic, compression type, partial-module flags,
//! region map: name records + one region per module, module versions), then compressed
//! regions: the job record (+ exe and mount table), the name records, one per module.
//!
//! The stages, one file each:
//!
//! * `header`   — the uncompressed header and region map;
//! * `inflate`  — zlib / bzip2 / uncompressed regions, charged to a decompression budget;
//! * `job`      — the job record, exe and mount table;
//! * `names`    — the name records, and each name's mount;
//! * `modules`  — what is known of each module (index, name, current version, record shape);
//! * `records`  — counter-module records, read into the current layout and columns;
//! * `upconvert`— darshan-util's per-module up-conversions of older record versions, as data;
//! * `lustre`, `heatmap`, `dxt` — the modules with variable-length records;
//! * `autoperf` — AutoPerf's APMPI and APXC (a header record, then fixed-size records);
//! * `dxt_stream` — DXT regions too large to hold, scanned here and then decoded in batches;
//! * `bytes`    — bounds-checked little helpers (words, C strings, a region cursor);
//! * `output`   — the decoded log (`Log` and its tables).

mod autoperf;
mod bytes;
mod dxt;
mod dxt_stream;
mod header;
mod heatmap;
mod inflate;
mod job;
mod lustre;
mod modules;
mod names;
mod output;
mod records;
mod upconvert;

pub use header::MAGIC;
pub use modules::{counter_shape, CounterShape, MODULE_NAMES, N_KNOWN_MODULES};
pub use dxt_stream::{DxtPart, DxtStream};
pub use output::{ApmpiHeader, ApmpiTable, ApxcTable, CounterTable, HeatmapTable, IoOps, Job, Log, LustreTable, ModInfo, StrCol};

use dxt::decode_dxt;
use dxt_stream::scan_dxt;
use header::{read_header, region};
use heatmap::heatmap_table;
use inflate::{inflate_region, inflate_region_into, Budget};
use job::{decode_job, JOB_RECORD_SIZE};
use lustre::lustre_table;
use autoperf::{apmpi_table, apxc_table};
use modules::{CUR_VERSIONS, M_APMPI, M_APXC, M_DXT_MPIIO, M_DXT_POSIX, M_HEATMAP, M_LUSTRE};
use names::{decode_names, resolve_mounts};
use records::decode_counter_module;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrKind {
    Corrupt,
    Unsupported,
    Limit,
}

impl ErrKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrKind::Corrupt => "corrupt",
            ErrKind::Unsupported => "unsupported",
            ErrKind::Limit => "limit",
        }
    }
}

#[derive(Debug, Clone)]
pub struct DecodeErr {
    pub kind: ErrKind,
    pub msg: String,
}

pub type Res<T> = Result<T, DecodeErr>;

fn corrupt<T>(msg: impl Into<String>) -> Res<T> {
    Err(DecodeErr { kind: ErrKind::Corrupt, msg: msg.into() })
}

/// Resource caps. The defaults bound a decode to roughly `max_total_out` bytes of decompressed
/// data plus the output columns derived from it.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Total decompressed bytes over all regions may not exceed
    /// `max(min_budget, ratio * file_len)`, nor `hard_cap`.
    pub ratio: usize,
    pub min_budget: usize,
    pub hard_cap: usize,
    /// Streamed DXT regions (`decode_with`) are not held, so they are not charged to the above;
    /// their decompressed bytes together may not exceed `max(min_budget, ratio * file_len)`,
    /// nor `stream_cap` (the decompression-bomb guard of a stream).
    pub stream_cap: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { ratio: 512, min_budget: 64 << 20, hard_cap: 1 << 30, stream_cap: 16 << 30 }
    }
}

// ----------------------------------------------------------------------------------------
// Whole log

/// Decodes one log: header, job record, name records, then every module region in index order.
pub fn decode(data: &[u8], limits: Limits) -> Res<Log> {
    decode_with(data, limits, None)
}

/// `decode`, except that when the DXT regions of the log (compressed, together) exceed
/// `stream_dxt_over` bytes, the DXT modules are only scanned (`dxt_stream::scan_dxt`: every
/// note, error and damage `decode` would give, nothing kept) and listed in `Log::dxt_parts`
/// for a `DxtStream` to decode in batches; `Log::io_ops` then has no rows.
pub fn decode_with(data: &[u8], limits: Limits, stream_dxt_over: Option<u64>) -> Res<Log> {
    let mut buf = SCRATCH.with(|s| s.take());
    let log = decode_into(data, limits, stream_dxt_over, &mut buf);
    if buf.capacity() <= SCRATCH_KEEP {
        SCRATCH.with(|s| s.replace(buf));
    }
    log
}

thread_local! {
    /// The buffer every region of a decode is inflated into, kept (emptied) for the thread's
    /// next decode: reused pages instead of fresh ones faulted in and zeroed by the kernel for
    /// each region of each log (docs/decisions/0038).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A scratch buffer that grew past this is dropped after the decode, not kept for the next.
const SCRATCH_KEEP: usize = 64 << 20;

/// `decode_with`, inflating each region into `buf`.
fn decode_into(data: &[u8], limits: Limits, stream_dxt_over: Option<u64>, buf: &mut Vec<u8>) -> Res<Log> {
    let h = read_header(data)?;
    let mut notes: Vec<String> = Vec::new();
    let budget_total = limits.min_budget.max(limits.ratio.saturating_mul(data.len())).min(limits.hard_cap);
    let mut budget = Budget { left: budget_total };
    let dxt_len = h.mod_map[M_DXT_POSIX].len.saturating_add(h.mod_map[M_DXT_MPIIO].len);
    let stream = stream_dxt_over.is_some_and(|t| dxt_len > t);
    let stream_total = limits.min_budget.max(limits.ratio.saturating_mul(data.len())).min(limits.stream_cap);
    let mut stream_budget = Budget { left: stream_total };
    let mut dxt_parts: Vec<DxtPart> = Vec::new();

    // job region: darshan-util reads at most one 4 KiB job record from it
    let job_raw = {
        let m = h.job_map;
        let reg = region(data, m, "job")?;
        inflate_region(h.comp_type, reg, Some(JOB_RECORD_SIZE), &mut budget, "job region")?
    };
    let job = decode_job(&h, &job_raw, &mut notes)?;

    let names = if h.name_map.len == 0 {
        Vec::new()
    } else {
        let reg = region(data, h.name_map, "name record")?;
        inflate_region_into(h.comp_type, reg, None, &mut budget, "name record region", buf)?;
        decode_names(&h, buf)?
    };

    let name_mount = resolve_mounts(&names, &job.mounts);

    let mut modules = Vec::new();
    #[allow(clippy::needless_range_loop)]
    for i in 0..64 {
        if h.mod_map[i].len == 0 {
            continue;
        }
        if i >= N_KNOWN_MODULES {
            notes.push(format!("unknown module index {i} (version {}) skipped", h.mod_ver[i]));
            continue;
        }
        modules.push(ModInfo {
            name: MODULE_NAMES[i].to_string(),
            idx: i,
            ver: h.mod_ver[i],
            len: h.mod_map[i].len,
            partial: (h.partial_flag >> i) & 1 == 1,
        });
    }

    let mut counter_tables = Vec::new();
    let mut lustre: Option<LustreTable> = None;
    let mut heatmap: Option<HeatmapTable> = None;
    let mut apmpi: Option<ApmpiTable> = None;
    let mut apxc: Option<ApxcTable> = None;
    let mut io_ops: Option<IoOps> = None;
    let mut damaged: Vec<(String, String)> = Vec::new();
    for m in &modules {
        let i = m.idx;
        // a region past the end of the file is damage even in a module not decoded into bronze
        if let Err(e) = region(data, h.mod_map[i], &m.name) {
            notes.push(format!("module {} damaged, its records dropped: {}", m.name, e.msg));
            damaged.push((m.name.clone(), e.msg));
            continue;
        }
        let decoded = counter_shape(i).is_some()
            || [M_LUSTRE, M_HEATMAP, M_DXT_POSIX, M_DXT_MPIIO, M_APMPI, M_APXC].contains(&i);
        if !decoded {
            notes.push(format!("module {} skipped: not decoded into bronze", m.name));
            continue;
        }
        let ver_ok = m.ver != 0 && m.ver <= CUR_VERSIONS[i];
        // AutoPerf's readers know one version only; `autoperf` notes any other itself
        let autoperf = i == M_APMPI || i == M_APXC;
        if !ver_ok && !autoperf {
            notes.push(format!("module {} version {} is newer than this decoder (or 0): no records", m.name, m.ver));
        }
        // Salvage: a module whose region is cut short or corrupt (the commonest real damage: a copy
        // cut while the last regions, DXT, were written) loses its own records only; the log keeps
        // every module that decodes and names the damaged ones. Limits still fail the whole log.
        let before = io_ops.as_ref().map(|t| (t.source.len(), t.hostnames.len()));
        let streamed = stream && (i == M_DXT_POSIX || i == M_DXT_MPIIO);
        let res = (|| -> Res<()> {
            let raw: &[u8] = if ver_ok && !streamed {
                let reg = region(data, h.mod_map[i], &m.name)?;
                inflate_region_into(h.comp_type, reg, None, &mut budget, &format!("{} region", m.name), buf)?;
                buf
            } else {
                &[]
            };
            if let Some(shape) = counter_shape(i) {
                let t = if ver_ok {
                    decode_counter_module(shape, m.ver, h.swapped, raw, &mut notes)?
                } else {
                    let (message, head) = records::counter_message(&shape, 0);
                    CounterTable { module: i, shape, n: 0, head, message }
                };
                counter_tables.push(t);
            } else if i == M_LUSTRE {
                lustre = Some(lustre_table(ver_ok, m.ver, h.swapped, raw, &mut notes)?);
            } else if i == M_HEATMAP {
                heatmap = Some(heatmap_table(ver_ok, h.swapped, raw, &mut notes)?);
            } else if i == M_APMPI {
                apmpi = Some(apmpi_table(m.ver, h.swapped, raw, &mut notes)?);
            } else if i == M_APXC {
                apxc = Some(apxc_table(m.ver, h.swapped, raw, &mut notes)?);
            } else {
                let t = io_ops.get_or_insert_with(IoOps::default);
                let src = if i == M_DXT_POSIX { 0 } else { 1 };
                if ver_ok && streamed {
                    let reg = region(data, h.mod_map[i], &m.name)?;
                    let out_len = scan_dxt(src, h.comp_type, h.swapped, reg, &mut stream_budget, &mut notes)?;
                    let (off, len) = (h.mod_map[i].off, h.mod_map[i].len);
                    dxt_parts.push(DxtPart { src, ver: m.ver, off, len, out_len });
                } else if ver_ok {
                    decode_dxt(src, m.ver, h.swapped, raw, t, &mut notes)?;
                }
            }
            Ok(())
        })();
        match res {
            Ok(()) => {}
            Err(e) if e.kind == ErrKind::Corrupt => {
                if let Some(t) = io_ops.as_mut() {
                    let (rows, hosts) = before.unwrap_or((0, 0));
                    t.truncate(rows, hosts);
                }
                notes.push(format!("module {} damaged, its records dropped: {}", m.name, e.msg));
                damaged.push((m.name.clone(), e.msg));
            }
            Err(e) => return Err(e),
        }
    }
    if !damaged.is_empty() && damaged.len() == modules.len() {
        let (name, why) = &damaged[0];
        return corrupt(format!("every module damaged (first: {name}: {why})"));
    }

    let mut regions = vec![("job".to_string(), h.job_map.off, h.job_map.len)];
    if h.name_map.len > 0 {
        regions.push(("names".to_string(), h.name_map.off, h.name_map.len));
    }
    regions.extend(modules.iter().map(|m| (m.name.clone(), h.mod_map[m.idx].off, h.mod_map[m.idx].len)));

    Ok(Log {
        version: h.version,
        major: h.major,
        minor: h.minor,
        magic: h.magic,
        comp_type: h.comp_type,
        swapped: h.swapped,
        partial_flag: h.partial_flag,
        job,
        names,
        name_mount,
        modules,
        counter_tables,
        lustre,
        heatmap,
        apmpi,
        apxc,
        io_ops,
        dxt_parts,
        regions,
        damaged,
        notes,
    })
}

/// Only decompresses the regions (job, names, every module): the floor a decoder can reach.
pub fn inflate_only(data: &[u8]) -> Res<usize> {
    let h = read_header(data)?;
    let mut budget = Budget { left: Limits::default().hard_cap };
    let mut total = 0;
    let mut maps = vec![h.job_map, h.name_map];
    maps.extend(h.mod_map.iter().copied().filter(|m| m.len > 0));
    for m in maps {
        if m.len == 0 {
            continue;
        }
        let reg = region(data, m, "region")?;
        total += inflate_region(h.comp_type, reg, None, &mut budget, "region")?.len();
    }
    Ok(total)
}
