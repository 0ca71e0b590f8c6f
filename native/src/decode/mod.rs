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

use std::collections::HashMap;

pub const MAGIC: i64 = 6567223;
const JOB_RECORD_SIZE: usize = 4096;
/// sizeof(struct darshan_job) of format 3.41 (7 int64 + 1024 bytes of metadata)
const JOB_STRUCT_341: usize = 7 * 8 + 1024;
const METADATA_LEN: usize = 1024;

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
}

impl Default for Limits {
    fn default() -> Self {
        Limits { ratio: 512, min_budget: 64 << 20, hard_cap: 1 << 30 }
    }
}

// ----------------------------------------------------------------------------------------
// Module table

pub const N_KNOWN_MODULES: usize = 18;
pub const MODULE_NAMES: [&str; N_KNOWN_MODULES] = [
    "NULL", "POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q", "LUSTRE",
    "STDIO", "DXT_POSIX", "DXT_MPIIO", "MDHIM", "APXC", "APMPI", "HEATMAP", "DFS", "DAOS",
];
const M_POSIX: usize = 1;
const M_MPIIO: usize = 2;
const M_H5F: usize = 3;
const M_H5D: usize = 4;
const M_PNC_FILE: usize = 5;
const M_PNC_VAR: usize = 6;
const M_LUSTRE: usize = 8;
const M_STDIO: usize = 9;
const M_DXT_POSIX: usize = 10;
const M_DXT_MPIIO: usize = 11;
const M_DFS: usize = 16;
const M_DAOS: usize = 17;

/// Shape of a counter module's current (darshan-util 3.5.0) record:
/// base record (id, rank), `pre` extra 8-byte words (file_rec_id), `nints` int64 counters,
/// `nflts` double counters, `tail` trailing bytes (uuids).
#[derive(Debug, Clone, Copy)]
pub struct CounterShape {
    pub module: usize,
    pub cur_ver: u32,
    pub pre: usize,
    pub nints: usize,
    pub nflts: usize,
    pub tail: usize,
}

impl CounterShape {
    pub fn size(&self) -> usize {
        16 + 8 * (self.pre + self.nints + self.nflts) + self.tail
    }
}

pub fn counter_shape(module: usize) -> Option<CounterShape> {
    let s = |cur_ver, pre, nints, nflts, tail| CounterShape { module, cur_ver, pre, nints, nflts, tail };
    Some(match module {
        M_POSIX => s(4, 0, 69, 17, 0),
        M_MPIIO => s(3, 0, 51, 17, 0),
        M_H5F => s(3, 0, 3, 5, 0),
        M_H5D => s(2, 1, 94, 17, 0),
        M_PNC_FILE => s(3, 0, 9, 8, 0),
        M_PNC_VAR => s(1, 1, 120, 17, 0),
        M_STDIO => s(2, 0, 14, 15, 0),
        M_DFS => s(1, 0, 52, 15, 32),
        M_DAOS => s(1, 0, 64, 15, 48), // uuids + oid_hi/oid_lo
        _ => return None,
    })
}

// ----------------------------------------------------------------------------------------
// Output

#[derive(Debug, Default, Clone)]
pub struct Job {
    pub uid: i64,
    pub start_time_sec: i64,
    pub start_time_nsec: i64,
    pub end_time_sec: i64,
    pub end_time_nsec: i64,
    pub nprocs: i64,
    pub jobid: i64,
    pub run_time: f64,
    pub metadata: Vec<(String, String)>,
    pub exe: String,
    /// (mount point, fs type), longest mount point first, as darshan-util sorts them
    pub mounts: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct ModInfo {
    pub name: String,
    pub idx: usize,
    pub ver: u32,
    pub len: u64,
    pub partial: bool,
}

/// Records of one counter module, column-major.
#[derive(Debug, Clone)]
pub struct CounterTable {
    pub module: usize,
    pub shape: CounterShape,
    pub n: usize,
    pub ids: Vec<i64>,
    pub ranks: Vec<i64>,
    /// nints columns of n values each
    pub ints: Vec<i64>,
    /// nflts columns of n values each
    pub flts: Vec<f64>,
}

/// A column of strings as Arrow buffers (i32 offsets + UTF-8 data).
#[derive(Debug, Default, Clone)]
pub struct StrCol {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
}

impl StrCol {
    pub fn new() -> Self {
        StrCol { offsets: vec![0], data: Vec::new() }
    }
    pub fn push(&mut self, s: &str) -> Res<()> {
        self.data.extend_from_slice(s.as_bytes());
        if self.data.len() > i32::MAX as usize {
            return Err(DecodeErr { kind: ErrKind::Limit, msg: "string column exceeds 2 GiB".into() });
        }
        self.offsets.push(self.data.len() as i32);
        Ok(())
    }
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Debug, Default, Clone)]
pub struct LustreTable {
    pub record_id: Vec<i64>,
    pub rank: Vec<i64>,
    pub component: Vec<i32>,
    /// 7 columns of n values each (filled column-major at the end)
    pub counters: Vec<i64>,
    rows: Vec<[i64; 7]>,
    pub pool_name: StrCol,
    pub ost_offsets: Vec<i32>,
    pub ost_ids: Vec<i64>,
}

#[derive(Debug, Default, Clone)]
pub struct IoOps {
    /// 0 = DXT_POSIX, 1 = DXT_MPIIO
    pub source: Vec<u8>,
    pub record_id: Vec<i64>,
    pub rank: Vec<i64>,
    pub seq: Vec<i64>,
    /// 0 = write, 1 = read
    pub op: Vec<u8>,
    pub offset: Vec<i64>,
    pub length: Vec<i64>,
    pub start: Vec<f64>,
    pub end: Vec<f64>,
    /// index into `hostnames` for each row
    pub host_idx: Vec<u32>,
    pub hostnames: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Log {
    pub version: String,
    pub major: i32,
    pub minor: i32,
    pub magic: i64,
    pub comp_type: u8,
    pub swapped: bool,
    pub partial_flag: u64,
    pub job: Job,
    pub names: Vec<(u64, String)>,
    /// index into `job.mounts` of each name's mount (longest matching mount point), or -1
    pub name_mount: Vec<i32>,
    pub modules: Vec<ModInfo>,
    pub counter_tables: Vec<CounterTable>,
    pub lustre: Option<LustreTable>,
    pub io_ops: Option<IoOps>,
    pub notes: Vec<String>,
}

// ----------------------------------------------------------------------------------------
// Small helpers

#[inline]
fn rd_u64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

#[inline]
fn rd_u32(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}

#[inline]
fn wr_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Reads a 64-bit word in the writer's byte order.
#[inline]
fn word(b: &[u8], off: usize, swap: bool) -> u64 {
    let v = rd_u64(b, off);
    if swap {
        v.swap_bytes()
    } else {
        v
    }
}

/// The C-string prefix of `b` (up to the first NUL), as text.
fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

fn cstr_bytes(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}

/// sscanf("%d") on the start of `s`: optional whitespace, sign, digits.
fn scan_int(s: &[u8]) -> Option<(i64, &[u8])> {
    let mut i = 0;
    while i < s.len() && (s[i] as char).is_ascii_whitespace() {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        neg = s[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut v: i64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.saturating_mul(10).saturating_add((s[i] - b'0') as i64);
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if neg { -v } else { v }, &s[i..]))
}

/// "%d.%d" of a version string.
fn parse_version(v: &[u8]) -> Option<(i32, i32)> {
    let (maj, rest) = scan_int(v)?;
    let rest = rest.strip_prefix(b".")?;
    // sscanf's %d would skip whitespace here too
    let (min, _) = scan_int(rest)?;
    Some((maj.clamp(i32::MIN as i64, i32::MAX as i64) as i32, min.clamp(i32::MIN as i64, i32::MAX as i64) as i32))
}

fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

// ----------------------------------------------------------------------------------------
// Decompression

struct Budget {
    left: usize,
}

impl Budget {
    fn take(&mut self, n: usize) -> Res<()> {
        if n > self.left {
            return Err(DecodeErr {
                kind: ErrKind::Limit,
                msg: "decompressed size exceeds the decoder's limit (possible decompression bomb)".into(),
            });
        }
        self.left -= n;
        Ok(())
    }
}

/// Inflates one region: a sequence of concatenated zlib (or bzip2) streams, as darshan-util
/// writes them (it restarts the stream at every stream end). `max_out`: stop (without error)
/// once that many bytes are produced; `None` = the whole region.
fn inflate_region(
    comp: u8,
    input: &[u8],
    max_out: Option<usize>,
    budget: &mut Budget,
    what: &str,
) -> Res<Vec<u8>> {
    match comp {
        2 => {
            let n = max_out.map_or(input.len(), |m| m.min(input.len()));
            budget.take(n)?;
            Ok(input[..n].to_vec())
        }
        0 => inflate_zlib(input, max_out, budget, what),
        1 => inflate_bzip2(input, max_out, budget, what),
        other => corrupt(format!("invalid compression type {other}")),
    }
}

const CHUNK: usize = 256 * 1024;

/// One step of a streaming decompressor: (input used, output produced, stream ended).
trait Inflater {
    fn step(&mut self, input: &[u8], out: &mut [u8]) -> Result<(usize, usize, bool), String>;
    fn restart(&mut self);
}

struct Zlib(flate2::Decompress);
impl Inflater for Zlib {
    fn step(&mut self, input: &[u8], out: &mut [u8]) -> Result<(usize, usize, bool), String> {
        let (i0, o0) = (self.0.total_in(), self.0.total_out());
        let st = self.0.decompress(input, out, flate2::FlushDecompress::None).map_err(|e| e.to_string())?;
        Ok(((self.0.total_in() - i0) as usize, (self.0.total_out() - o0) as usize, st == flate2::Status::StreamEnd))
    }
    fn restart(&mut self) {
        self.0.reset(true);
    }
}

struct Bz(bzip2::Decompress);
impl Inflater for Bz {
    fn step(&mut self, input: &[u8], out: &mut [u8]) -> Result<(usize, usize, bool), String> {
        let (i0, o0) = (self.0.total_in(), self.0.total_out());
        let st = self.0.decompress(input, out).map_err(|e| e.to_string())?;
        Ok(((self.0.total_in() - i0) as usize, (self.0.total_out() - o0) as usize, st == bzip2::Status::StreamEnd))
    }
    fn restart(&mut self) {
        self.0 = bzip2::Decompress::new(false);
    }
}

/// Decompresses concatenated streams until the input is used up (or `max_out` bytes are
/// produced). The output grows in chunks, each zeroed once, and is charged to the budget
/// before it is allocated, so a bomb stops at the budget.
fn inflate_streams(
    z: &mut dyn Inflater,
    kind: &str,
    input: &[u8],
    max_out: Option<usize>,
    budget: &mut Budget,
    what: &str,
) -> Res<Vec<u8>> {
    let mut out: Vec<u8> = Vec::new();
    let mut filled = 0usize;
    let mut pos = 0usize;
    let mut in_stream = false;
    let first = (input.len().saturating_mul(4)).clamp(4096, 16 << 20);
    loop {
        if let Some(m) = max_out {
            if filled >= m {
                out.truncate(m);
                return Ok(out);
            }
        }
        if pos >= input.len() && !in_stream {
            out.truncate(filled);
            return Ok(out);
        }
        if filled == out.len() {
            let grow = if out.is_empty() { first } else { CHUNK.max(out.len() / 2) };
            let grow = match max_out {
                Some(m) => grow.min(m - filled),
                None => grow,
            };
            let grow = grow.min(budget.left.max(1));
            out.resize(out.len() + grow, 0);
        }
        let (used, produced, ended) = z
            .step(&input[pos..], &mut out[filled..])
            .map_err(|e| DecodeErr { kind: ErrKind::Corrupt, msg: format!("{what}: {kind} error: {e}") })?;
        budget.take(produced)?;
        pos += used;
        filled += produced;
        in_stream = true;
        if ended {
            z.restart();
            in_stream = false;
        } else if used == 0 && produced == 0 {
            if pos >= input.len() {
                return corrupt(format!("{what}: compressed data ends inside a {kind} stream (truncated)"));
            }
            return corrupt(format!("{what}: {kind} stream makes no progress"));
        }
    }
}

fn inflate_zlib(input: &[u8], max_out: Option<usize>, budget: &mut Budget, what: &str) -> Res<Vec<u8>> {
    inflate_streams(&mut Zlib(flate2::Decompress::new(true)), "zlib", input, max_out, budget, what)
}

fn inflate_bzip2(input: &[u8], max_out: Option<usize>, budget: &mut Budget, what: &str) -> Res<Vec<u8>> {
    inflate_streams(&mut Bz(bzip2::Decompress::new(false)), "bzip2", input, max_out, budget, what)
}

// ----------------------------------------------------------------------------------------
// Header

#[derive(Debug, Clone, Copy, Default)]
struct Map {
    off: u64,
    len: u64,
}

struct Header {
    version: String,
    major: i32,
    minor: i32,
    magic: i64,
    comp_type: u8,
    swapped: bool,
    partial_flag: u64,
    name_map: Map,
    mod_map: [Map; 64],
    mod_ver: [u32; 64],
    job_map: Map,
}

fn read_header(data: &[u8]) -> Res<Header> {
    if data.len() >= 2 && data[0] == 0x1f && data[1] == 0x8b {
        return Err(DecodeErr {
            kind: ErrKind::Unsupported,
            msg: "unsupported format 2.x (gzip-compressed Darshan 1.x/2.x log)".into(),
        });
    }
    if data.len() < 8 {
        return corrupt(format!("truncated header: {} bytes", data.len()));
    }
    let vbytes = cstr_bytes(&data[..8]);
    let version = String::from_utf8_lossy(vbytes).into_owned();
    let (major, minor) = match parse_version(vbytes) {
        Some(v) => v,
        None => {
            // Darshan 1.x/2.x uncompressed logs start with a binary job struct
            return corrupt("unable to parse log file format version".to_string());
        }
    };
    if major != 3 || !matches!(minor, 0 | 10 | 20 | 21 | 41) {
        let msg = if major == 1 || major == 2 {
            format!("unsupported format {major}.x")
        } else {
            format!("unsupported format {version}")
        };
        return Err(DecodeErr { kind: ErrKind::Unsupported, msg });
    }
    let new_layout = minor >= 41;
    let hdr_size = if new_layout { 8 + 8 + 8 + 8 + 16 + 64 * 16 + 64 * 4 } else { 8 + 8 + 4 + 4 + 16 + 16 * 16 + 16 * 4 };
    if data.len() < hdr_size {
        return corrupt(format!("truncated header: {} bytes, need {}", data.len(), hdr_size));
    }
    let raw_magic = rd_u64(data, 8);
    let swapped;
    if raw_magic as i64 == MAGIC {
        swapped = false;
    } else if raw_magic.swap_bytes() as i64 == MAGIC {
        swapped = true;
    } else {
        return corrupt(format!("bad magic number {:#x}", raw_magic));
    }
    let comp_type = data[16];
    // NOTE: darshan-util never byte-swaps the partial flag.
    let (mut partial_flag, maps_off, nmods) =
        if new_layout { (rd_u64(data, 24), 32usize, 64usize) } else { (rd_u32(data, 20) as u64, 24usize, 16usize) };
    let name_map = Map { off: word(data, maps_off, swapped), len: word(data, maps_off + 8, swapped) };
    let mut mod_map = [Map::default(); 64];
    let mut mod_ver = [0u32; 64];
    let vers_off = maps_off + 16 + nmods * 16;
    for i in 0..nmods {
        let o = maps_off + 16 + i * 16;
        mod_map[i] = Map { off: word(data, o, swapped), len: word(data, o + 8, swapped) };
        let v = rd_u32(data, vers_off + 4 * i);
        mod_ver[i] = if swapped { v.swap_bytes() } else { v };
    }
    // module index shifts: H5D was added in 3.20, PNETCDF_VAR in 3.41
    let shift_at = |idx: usize, mod_map: &mut [Map; 64], mod_ver: &mut [u32; 64], pf: &mut u64| {
        for i in (idx + 1..64).rev() {
            mod_map[i] = mod_map[i - 1];
            mod_ver[i] = mod_ver[i - 1];
        }
        mod_map[idx] = Map::default();
        mod_ver[idx] = 0;
        let shifted = (*pf << 1) >> (idx + 1) << (idx + 1);
        *pf = (*pf & ((1u64 << idx) - 1)) | shifted;
    };
    if minor < 20 {
        shift_at(M_H5D, &mut mod_map, &mut mod_ver, &mut partial_flag);
    }
    if minor < 41 {
        shift_at(M_PNC_VAR, &mut mod_map, &mut mod_ver, &mut partial_flag);
    }
    let job_off = hdr_size as u64;
    let job_len = if name_map.off == 0 {
        let mut l = 0u64;
        for m in mod_map.iter() {
            if m.off != 0 {
                l = m.off.wrapping_sub(job_off);
                break;
            }
        }
        if l == 0 {
            l = (data.len() as u64).wrapping_sub(job_off);
        }
        l
    } else {
        name_map.off.wrapping_sub(job_off)
    };
    Ok(Header {
        version,
        major,
        minor,
        magic: if swapped { raw_magic.swap_bytes() as i64 } else { raw_magic as i64 },
        comp_type,
        swapped,
        partial_flag,
        name_map,
        mod_map,
        mod_ver,
        job_map: Map { off: job_off, len: job_len },
    })
}

fn region<'a>(data: &'a [u8], m: Map, what: &str) -> Res<&'a [u8]> {
    let end = m.off.checked_add(m.len);
    match end {
        Some(e) if e <= data.len() as u64 => Ok(&data[m.off as usize..e as usize]),
        _ => corrupt(format!(
            "{what} region [{}, +{}) lies outside the file ({} bytes; truncated?)",
            m.off,
            m.len,
            data.len()
        )),
    }
}

// ----------------------------------------------------------------------------------------
// Job, exe, mounts

fn decode_job(h: &Header, buf: &[u8], notes: &mut Vec<String>) -> Res<Job> {
    if buf.len() <= JOB_STRUCT_341 {
        return corrupt(format!("job region too short ({} bytes)", buf.len()));
    }
    let mut jb = [0u8; JOB_RECORD_SIZE];
    jb[..buf.len().min(JOB_RECORD_SIZE)].copy_from_slice(&buf[..buf.len().min(JOB_RECORD_SIZE)]);
    let s = h.swapped;
    let w = |i: usize| word(&jb, i * 8, s) as i64;
    let mut job = Job::default();
    let trailing: &[u8];
    let metadata: &[u8];
    if h.minor >= 41 {
        job.uid = w(0);
        job.start_time_sec = w(1);
        job.start_time_nsec = w(2);
        job.end_time_sec = w(3);
        job.end_time_nsec = w(4);
        job.nprocs = w(5);
        job.jobid = w(6);
        metadata = &jb[56..56 + METADATA_LEN];
        trailing = &jb[JOB_STRUCT_341..];
        job.run_time = (job.end_time_sec as f64 + job.end_time_nsec as f64 / 1e9)
            - (job.start_time_sec as f64 + job.start_time_nsec as f64 / 1e9);
    } else {
        job.uid = w(0);
        job.start_time_sec = w(1);
        job.end_time_sec = w(2);
        job.nprocs = w(3);
        job.jobid = w(4);
        metadata = &jb[40..40 + METADATA_LEN];
        trailing = &jb[40 + METADATA_LEN..];
        job.run_time = job.end_time_sec.wrapping_sub(job.start_time_sec).wrapping_add(1) as f64;
    }
    // metadata: "key=value\n" lines; darshan-util drops what follows the last newline
    let md = String::from_utf8_lossy(cstr_bytes(metadata)).into_owned();
    let mut lines: Vec<&str> = md.split('\n').collect();
    lines.pop();
    let mut index: HashMap<String, usize> = HashMap::new();
    for kv in lines {
        match kv.split_once('=') {
            Some((k, v)) => {
                if let Some(&i) = index.get(k) {
                    job.metadata[i].1 = v.to_string();
                } else {
                    index.insert(k.to_string(), job.metadata.len());
                    job.metadata.push((k.to_string(), v.to_string()));
                }
            }
            None => notes.push(format!("job metadata line without '=' skipped: {kv:?}")),
        }
    }
    // exe: up to the first newline; mount table: one "type\tpath" entry after each newline
    let text = cstr_bytes(trailing);
    if let Some(nl) = text.iter().position(|&c| c == b'\n') {
        job.exe = String::from_utf8_lossy(&text[..nl]).into_owned();
    }
    let mut mounts: Vec<(String, String)> = Vec::new();
    for (i, _) in text.iter().enumerate().filter(|(_, &c)| c == b'\n') {
        let mut p = i + 1;
        let mut tok = || -> Option<&[u8]> {
            while p < text.len() && is_c_space(text[p]) {
                p += 1;
            }
            let st = p;
            while p < text.len() && !is_c_space(text[p]) {
                p += 1;
            }
            if p == st {
                None
            } else {
                Some(&text[st..p])
            }
        };
        match (tok(), tok()) {
            (Some(t), Some(path)) => mounts.push((
                String::from_utf8_lossy(path).into_owned(),
                String::from_utf8_lossy(t).into_owned(),
            )),
            _ => {
                notes.push("poorly formatted mount table: entries after the first bad line dropped".into());
                break;
            }
        }
    }
    // longest mount point first (stable, as glibc's merge-sort qsort)
    mounts.sort_by_key(|m| std::cmp::Reverse(m.0.len()));
    job.mounts = mounts;
    Ok(job)
}

// ----------------------------------------------------------------------------------------
// Name records

fn decode_names(h: &Header, buf: &[u8]) -> Res<Vec<(u64, String)>> {
    let mut out: Vec<(u64, String)> = Vec::new();
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut p = 0usize;
    let s = h.swapped;
    if h.minor == 0 {
        // 3.00: id | uint32 path_len | path (no NUL)
        while buf.len() - p > 12 {
            let id = word(buf, p, s);
            let raw_len = rd_u32(buf, p + 8);
            let plen = if s { raw_len.swap_bytes() } else { raw_len } as usize;
            if buf.len() - p - 12 < plen {
                return corrupt("name record region ends inside a record");
            }
            let name = cstr(&buf[p + 12..p + 12 + plen]);
            p += 12 + plen;
            if let std::collections::hash_map::Entry::Vacant(e) = index.entry(id) {
                e.insert(out.len());
                out.push((id, name));
            }
        }
    } else {
        // 3.10+: id | NUL-terminated path
        while buf.len() - p >= 9 {
            let id = word(buf, p, s);
            let rest = &buf[p + 8..];
            let nul = match rest.iter().position(|&c| c == 0) {
                Some(n) => n,
                None => return corrupt("name record region ends inside a record"),
            };
            let name = &rest[..nul];
            p += 8 + nul + 1;
            match index.get(&id) {
                None => {
                    index.insert(id, out.len());
                    out.push((id, String::from_utf8_lossy(name).into_owned()));
                }
                Some(&i) => {
                    if out[i].1.is_empty() && !name.is_empty() {
                        out[i].1 = String::from_utf8_lossy(name).into_owned();
                    }
                }
            }
        }
    }
    if p != buf.len() {
        return corrupt(format!("name record region has {} trailing bytes", buf.len() - p));
    }
    Ok(out)
}

// ----------------------------------------------------------------------------------------
// Counter modules (with darshan-util's version up-conversions, byte for byte)

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// The next `n` bytes, or None on a short read (end of region).
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return None;
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Some(s)
    }
    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }
}

const NEG1_F64: u64 = 0xBFF0_0000_0000_0000; // (-1.0f64).to_bits()
const NEG1_I64: u64 = u64::MAX;

/// C's memmove inside the 1024-byte scratch buffer.
#[inline]
fn mv(s: &mut [u8; 1024], dest: usize, src: usize, len: usize) {
    s.copy_within(src..src + len, dest);
}

const B: usize = 16; // sizeof(struct darshan_base_record)

/// Reads one record of a counter module into `rec` (current layout, host byte order).
/// Returns Ok(false) at the end of the region (short read), as darshan-util does.
fn read_counter_record(
    shape: &CounterShape,
    ver: u32,
    swap: bool,
    cur: &mut Cursor,
    rec: &mut Vec<u8>,
) -> Res<bool> {
    let size = shape.size();
    rec.clear();
    let mut skip_int: &[usize] = &[];
    let mut skip_flt: &[usize] = &[];
    let mut skip_pre = false;
    if ver == shape.cur_ver {
        match cur.take(size) {
            Some(b) => rec.extend_from_slice(b),
            None => return Ok(false),
        }
    } else {
        let mut s = [0u8; 1024];
        match shape.module {
            M_POSIX => {
                let mut rec_len = 0usize;
                if ver == 1 {
                    rec_len = 680;
                    // records with STDIO counters mixed in cannot be up-converted: skipped
                    loop {
                        let b = match cur.take(rec_len) {
                            Some(b) => b,
                            None => return Ok(false),
                        };
                        s[..rec_len].copy_from_slice(b);
                        if (rd_u64(&s, B + 6 * 8) as i64) <= 0 {
                            break;
                        }
                    }
                    let dest = B + 6 * 8;
                    let src = dest + 4 * 8;
                    mv(&mut s, dest, src, rec_len - src);
                }
                if ver <= 2 {
                    if ver == 2 {
                        rec_len = 648;
                        match cur.take(rec_len) {
                            Some(b) => s[..rec_len].copy_from_slice(b),
                            None => return Ok(false),
                        }
                    }
                    let dest = B + 64 * 8 + 5 * 8;
                    let src = dest - 2 * 8;
                    mv(&mut s, dest, src, 12 * 8);
                    wr_u64(&mut s, src, NEG1_F64);
                    wr_u64(&mut s, src + 8, NEG1_F64);
                }
                if ver <= 3 {
                    if ver == 3 {
                        rec_len = 664;
                        match cur.take(rec_len) {
                            Some(b) => s[..rec_len].copy_from_slice(b),
                            None => return Ok(false),
                        }
                    }
                    let dest = B + 3 * 8;
                    let src = dest - 2 * 8;
                    mv(&mut s, dest, src, rec_len - src);
                    wr_u64(&mut s, src, NEG1_I64);
                    wr_u64(&mut s, src + 8, NEG1_I64);
                    let dest = B + 13 * 8;
                    let src = dest - 3 * 8;
                    mv(&mut s, dest, src, rec_len - src);
                    wr_u64(&mut s, src, NEG1_I64);
                    wr_u64(&mut s, src + 8, NEG1_I64);
                    wr_u64(&mut s, src + 16, 0);
                }
                // darshan-util skips byte-swapping the values it set itself; for
                // versions < 4 it tests the *integer* RENAME indices (10, 11, 12) inside the
                // float loop, so those float counters stay unswapped -- reproduced here.
                if ver < 3 {
                    skip_flt = &[3, 4, 10, 11, 12];
                } else {
                    skip_flt = &[10, 11, 12];
                }
            }
            M_MPIIO => {
                let rec_len = 544;
                match cur.take(rec_len) {
                    Some(b) => s[..rec_len].copy_from_slice(b),
                    None => return Ok(false),
                }
                let dest = B + 51 * 8 + 5 * 8;
                let src = dest - 2 * 8;
                mv(&mut s, dest, src, 12 * 8);
                wr_u64(&mut s, src, NEG1_F64);
                wr_u64(&mut s, src + 8, NEG1_F64);
                skip_flt = &[3, 4];
            }
            M_STDIO => {
                // only version 1 precedes the current one
                let rec_len = 240;
                match cur.take(rec_len) {
                    Some(b) => s[..rec_len].copy_from_slice(b),
                    None => return Ok(false),
                }
                let dest = B + 2 * 8;
                let src = dest - 8;
                mv(&mut s, dest, src, rec_len - src);
                wr_u64(&mut s, src, NEG1_I64);
                skip_int = &[1];
            }
            M_H5F => {
                if ver == 1 {
                    let rec_len = 40;
                    match cur.take(rec_len) {
                        Some(b) => s[..rec_len].copy_from_slice(b),
                        None => return Ok(false),
                    }
                    let dest = B + 8 + 3 * 8;
                    let src = dest - 2 * 8;
                    mv(&mut s, dest, src, 8);
                    wr_u64(&mut s, src, NEG1_F64);
                    wr_u64(&mut s, src + 8, NEG1_F64);
                }
                if ver <= 2 {
                    if ver == 2 {
                        let rec_len = 56;
                        match cur.take(rec_len) {
                            Some(b) => s[..rec_len].copy_from_slice(b),
                            None => return Ok(false),
                        }
                    }
                    let dest = B + 3 * 8;
                    let src = dest - 2 * 8;
                    mv(&mut s, dest, src, 4 * 8);
                    wr_u64(&mut s, src, NEG1_I64);
                    wr_u64(&mut s, src + 8, NEG1_I64);
                    wr_u64(&mut s, dest + 4 * 8, NEG1_F64);
                }
                skip_int = &[1, 2];
                skip_flt = if ver == 1 { &[1, 2, 4] } else { &[4] };
            }
            M_H5D => {
                // version 1: no file_rec_id
                let rec_len = 904;
                match cur.take(rec_len) {
                    Some(b) => s[..rec_len].copy_from_slice(b),
                    None => return Ok(false),
                }
                let dest = B + 8;
                let src = dest - 8;
                mv(&mut s, dest, src, rec_len - B);
                wr_u64(&mut s, src, 0);
                skip_pre = true;
            }
            M_PNC_FILE => {
                if ver == 1 {
                    let rec_len = 48;
                    match cur.take(rec_len) {
                        Some(b) => s[..rec_len].copy_from_slice(b),
                        None => return Ok(false),
                    }
                    let dest = B + 2 * 8 + 3 * 8;
                    let src = dest - 2 * 8;
                    mv(&mut s, dest, src, 8);
                    wr_u64(&mut s, src, NEG1_F64);
                    wr_u64(&mut s, src + 8, NEG1_F64);
                }
                if ver <= 2 {
                    if ver == 2 {
                        let rec_len = 64;
                        match cur.take(rec_len) {
                            Some(b) => s[..rec_len].copy_from_slice(b),
                            None => return Ok(false),
                        }
                    }
                    // FILE_OPENS = INDEP_OPENS + COLL_OPENS (added in host order, as C does)
                    let a = rd_u64(&s, B) as i64;
                    let b = rd_u64(&s, B + 8) as i64;
                    wr_u64(&mut s, B + 8, b.wrapping_add(a) as u64);
                    mv(&mut s, B + 9 * 8, B + 2 * 8, 16);
                    mv(&mut s, B + 9 * 8 + 3 * 8, B + 2 * 8 + 2 * 8, 16);
                    wr_u64(&mut s, B, NEG1_I64);
                    for i in 0..7 {
                        wr_u64(&mut s, B + 2 * 8 + i * 8, NEG1_I64);
                    }
                    // WAIT_START, WAIT_END, META_TIME, WAIT_TIME
                    let f0 = B + 9 * 8;
                    wr_u64(&mut s, f0 + 2 * 8, NEG1_F64);
                    wr_u64(&mut s, f0 + 5 * 8, NEG1_F64);
                    wr_u64(&mut s, f0 + 6 * 8, NEG1_F64);
                    wr_u64(&mut s, f0 + 7 * 8, NEG1_F64);
                }
                skip_int = &[0, 2, 3, 4, 5, 6, 7, 8];
                skip_flt = if ver == 1 { &[1, 2, 3, 5, 6, 7] } else { &[2, 5, 6, 7] };
            }
            _ => {
                // no older versions exist for this module
                return corrupt(format!("{} module version {ver} has no known layout", MODULE_NAMES[shape.module]));
            }
        }
        rec.extend_from_slice(&s[..size]);
    }
    if swap {
        let mut sw = |off: usize| {
            let v = rd_u64(rec, off).swap_bytes();
            wr_u64(rec, off, v);
        };
        sw(0);
        sw(8);
        if shape.pre > 0 && !skip_pre {
            sw(16);
        }
        let ib = 16 + 8 * shape.pre;
        for i in 0..shape.nints {
            if !skip_int.contains(&i) {
                sw(ib + 8 * i);
            }
        }
        let fb = ib + 8 * shape.nints;
        for i in 0..shape.nflts {
            if !skip_flt.contains(&i) {
                sw(fb + 8 * i);
            }
        }
        // (uuid bytes are not emitted)
    }
    Ok(true)
}

fn decode_counter_module(
    shape: CounterShape,
    ver: u32,
    swap: bool,
    buf: &[u8],
    notes: &mut Vec<String>,
) -> Res<CounterTable> {
    let size = shape.size();
    let cap = buf.len() / size.clamp(16, 680) + 1;
    let mut rows: Vec<u8> = Vec::with_capacity(cap.min(1 << 20) * size);
    let mut cur = Cursor { buf, pos: 0 };
    let mut rec = Vec::with_capacity(size);
    let mut n = 0usize;
    while read_counter_record(&shape, ver, swap, &mut cur, &mut rec)? {
        rows.extend_from_slice(&rec);
        n += 1;
    }
    if cur.left() > 0 {
        notes.push(format!(
            "{}: {} trailing bytes after the last whole record ignored",
            MODULE_NAMES[shape.module],
            cur.left()
        ));
    }
    // transpose to columns
    let mut ids = Vec::with_capacity(n);
    let mut ranks = Vec::with_capacity(n);
    let mut ints = vec![0i64; n * shape.nints];
    let mut flts = vec![0f64; n * shape.nflts];
    let ib = 16 + 8 * shape.pre;
    let fb = ib + 8 * shape.nints;
    for r in 0..n {
        let row = &rows[r * size..(r + 1) * size];
        ids.push(rd_u64(row, 0) as i64);
        ranks.push(rd_u64(row, 8) as i64);
        for c in 0..shape.nints {
            ints[c * n + r] = rd_u64(row, ib + 8 * c) as i64;
        }
        for c in 0..shape.nflts {
            flts[c * n + r] = f64::from_bits(rd_u64(row, fb + 8 * c));
        }
    }
    Ok(CounterTable { module: shape.module, shape, n, ids, ranks, ints, flts })
}

// ----------------------------------------------------------------------------------------
// Lustre

fn decode_lustre(ver: u32, swap: bool, buf: &[u8], t: &mut LustreTable, notes: &mut Vec<String>) -> Res<()> {
    let mut cur = Cursor { buf, pos: 0 };
    let w = |b: &[u8], i: usize| word(b, i * 8, swap) as i64;
    'records: loop {
        if ver == 1 {
            let fixed = match cur.take(56) {
                Some(b) => b,
                None => break,
            };
            let id = w(fixed, 0);
            let rank = w(fixed, 1);
            let stripe_size = w(fixed, 5);
            let stripe_count = w(fixed, 6);
            if stripe_count < 0 || (stripe_count as u64).saturating_mul(8) > cur.left() as u64 {
                notes.push("LUSTRE: record with an OST list past the region end; stopped".into());
                break;
            }
            let osts = cur.take(stripe_count as usize * 8).unwrap_or(&[]);
            t.record_id.push(id);
            t.rank.push(rank);
            t.component.push(0);
            t.rows.push([stripe_size, stripe_count, -1, -1, 0, -1, -1]);
            t.pool_name.push("")?;
            for i in 0..stripe_count as usize {
                t.ost_ids.push(w(osts, i));
            }
            push_offset(&mut t.ost_offsets, t.ost_ids.len())?;
        } else {
            let fixed = match cur.take(32) {
                Some(b) => b,
                None => break,
            };
            let id = w(fixed, 0);
            let rank = w(fixed, 1);
            let num_comps = w(fixed, 2);
            let num_stripes = w(fixed, 3);
            if num_comps < 1 {
                // darshan-util consumes only the fixed part of such a record
                continue;
            }
            let need = (num_comps as u64).saturating_mul(72).saturating_add((num_stripes.max(0) as u64).saturating_mul(8));
            if num_stripes < 0 || need > cur.left() as u64 {
                notes.push("LUSTRE: record with components past the region end; stopped".into());
                break;
            }
            let comps = cur.take(num_comps as usize * 72).unwrap_or(&[]);
            let osts = cur.take(num_stripes as usize * 8).unwrap_or(&[]);
            let mut ost_i = 0usize;
            for c in 0..num_comps as usize {
                let cb = &comps[c * 72..(c + 1) * 72];
                let mut ctr = [0i64; 7];
                for (j, v) in ctr.iter_mut().enumerate() {
                    *v = w(cb, j);
                }
                // unused components are marked with stripe size -1: the list ends there
                if ctr[0] == -1 {
                    break;
                }
                let sc = ctr[1];
                if sc < 0 || (ost_i as u64).saturating_add(sc as u64) > num_stripes as u64 {
                    // darshan-util would read past the record here; we stop (the rows of
                    // earlier records are kept), like pydarshan stops at a failed record
                    notes.push("LUSTRE: component stripe counts exceed the record's OST list; stopped".into());
                    break 'records;
                }
                t.record_id.push(id);
                t.rank.push(rank);
                t.component.push(c as i32);
                t.rows.push(ctr);
                t.pool_name.push(&cstr(&cb[56..72]))?;
                for k in 0..sc as usize {
                    t.ost_ids.push(w(osts, ost_i + k));
                }
                ost_i += sc as usize;
                push_offset(&mut t.ost_offsets, t.ost_ids.len())?;
            }
        }
    }
    Ok(())
}

fn push_offset(v: &mut Vec<i32>, n: usize) -> Res<()> {
    if n > i32::MAX as usize {
        return Err(DecodeErr { kind: ErrKind::Limit, msg: "list column exceeds 2^31 values".into() });
    }
    v.push(n as i32);
    Ok(())
}

// ----------------------------------------------------------------------------------------
// DXT

fn decode_dxt(src: u8, ver: u32, swap: bool, buf: &[u8], t: &mut IoOps, notes: &mut Vec<String>) -> Res<()> {
    let name = if src == 0 { "DXT_POSIX" } else { "DXT_MPIIO" };
    let mut cur = Cursor { buf, pos: 0 };
    let mut hosts: HashMap<Vec<u8>, u32> = t
        .hostnames
        .iter()
        .enumerate()
        .map(|(i, h)| (h.as_bytes().to_vec(), i as u32))
        .collect();
    while let Some(hdr) = cur.take(104) {
        let id = word(hdr, 0, swap) as i64;
        let rank = word(hdr, 8, swap) as i64;
        let host = cstr_bytes(&hdr[24..88]);
        let wc = word(hdr, 88, swap) as i64;
        let rc = word(hdr, 96, swap) as i64;
        if wc < 0 || rc < 0 {
            return corrupt(format!("{name}: negative segment count"));
        }
        let nseg = (wc as u64).saturating_add(rc as u64);
        if nseg.saturating_mul(32) > cur.left() as u64 {
            notes.push(format!("{name}: record with segments past the region end; stopped"));
            break;
        }
        let segs = cur.take(nseg as usize * 32).unwrap_or(&[]);
        let hi = match hosts.get(host) {
            Some(&i) => i,
            None => {
                let i = t.hostnames.len() as u32;
                t.hostnames.push(String::from_utf8_lossy(host).into_owned());
                hosts.insert(host.to_vec(), i);
                i
            }
        };
        for k in 0..nseg as usize {
            let sb = &segs[k * 32..k * 32 + 32];
            let (op, seq) = if (k as u64) < wc as u64 { (0u8, k as i64) } else { (1u8, k as i64 - wc) };
            t.source.push(src);
            t.record_id.push(id);
            t.rank.push(rank);
            t.seq.push(seq);
            t.op.push(op);
            let off = word(sb, 0, swap) as i64;
            // DXT_MPIIO version 1 did not record offsets
            t.offset.push(if src == 1 && ver == 1 { -1 } else { off });
            t.length.push(word(sb, 8, swap) as i64);
            t.start.push(f64::from_bits(word(sb, 16, swap)));
            t.end.push(f64::from_bits(word(sb, 24, swap)));
            t.host_idx.push(hi);
        }
    }
    Ok(())
}

// ----------------------------------------------------------------------------------------
// Whole log

const CUR_VERSIONS: [u32; N_KNOWN_MODULES] = [1, 4, 3, 3, 2, 3, 1, 2, 2, 2, 1, 2, 1, 0, 0, 1, 1, 1];

pub fn decode(data: &[u8], limits: Limits) -> Res<Log> {
    let h = read_header(data)?;
    let mut notes: Vec<String> = Vec::new();
    let budget_total = limits.min_budget.max(limits.ratio.saturating_mul(data.len())).min(limits.hard_cap);
    let mut budget = Budget { left: budget_total };

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
        let raw = inflate_region(h.comp_type, reg, None, &mut budget, "name record region")?;
        decode_names(&h, &raw)?
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
    let mut io_ops: Option<IoOps> = None;
    for m in &modules {
        let i = m.idx;
        let decoded = counter_shape(i).is_some() || i == M_LUSTRE || i == M_DXT_POSIX || i == M_DXT_MPIIO;
        if !decoded {
            notes.push(format!("module {} skipped: not decoded into bronze", m.name));
            continue;
        }
        let ver_ok = m.ver != 0 && m.ver <= CUR_VERSIONS[i];
        let raw = if ver_ok {
            let reg = region(data, h.mod_map[i], &m.name)?;
            inflate_region(h.comp_type, reg, None, &mut budget, &format!("{} region", m.name))?
        } else {
            notes.push(format!("module {} version {} is newer than this decoder (or 0): no records", m.name, m.ver));
            Vec::new()
        };
        if let Some(shape) = counter_shape(i) {
            let t = if ver_ok {
                decode_counter_module(shape, m.ver, h.swapped, &raw, &mut notes)?
            } else {
                CounterTable { module: i, shape, n: 0, ids: vec![], ranks: vec![], ints: vec![], flts: vec![] }
            };
            counter_tables.push(t);
        } else if i == M_LUSTRE {
            let mut t = LustreTable { ost_offsets: vec![0], pool_name: StrCol::new(), ..Default::default() };
            if ver_ok {
                decode_lustre(m.ver, h.swapped, &raw, &mut t, &mut notes)?;
            }
            let n = t.rows.len();
            let mut cols = vec![0i64; n * 7];
            for (r, row) in t.rows.iter().enumerate() {
                for c in 0..7 {
                    cols[c * n + r] = row[c];
                }
            }
            t.counters = cols;
            t.rows = Vec::new();
            lustre = Some(t);
        } else {
            let t = io_ops.get_or_insert_with(IoOps::default);
            if ver_ok {
                let src = if i == M_DXT_POSIX { 0 } else { 1 };
                decode_dxt(src, m.ver, h.swapped, &raw, t, &mut notes)?;
            }
        }
    }

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
        io_ops,
        notes,
    })
}

/// For each path, the mount whose point is the longest path prefix of it (a mount point `m`
/// matches `p` when `p == m` or `p` starts with `m` without trailing slashes plus "/"); ties go
/// to the first such mount in table order.
fn resolve_mounts(names: &[(u64, String)], mounts: &[(String, String)]) -> Vec<i32> {
    let prepared: Vec<(String, &str, usize)> = mounts
        .iter()
        .map(|(mp, _)| (format!("{}/", mp.trim_end_matches('/')), mp.as_str(), mp.chars().count()))
        .collect();
    names
        .iter()
        .map(|(_, p)| {
            let mut best: i32 = -1;
            let mut best_len = 0usize;
            for (i, (pre, mp, len)) in prepared.iter().enumerate() {
                if (p == mp || p.starts_with(pre.as_str())) && (best < 0 || *len > best_len) {
                    best = i as i32;
                    best_len = *len;
                }
            }
            best
        })
        .collect()
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
