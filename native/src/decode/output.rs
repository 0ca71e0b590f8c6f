//! The decoded log: header facts, job, names and one column-major table per module.

use super::{CounterShape, DecodeErr, DxtPart, ErrKind, Res};

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

/// Records of one counter module as one Arrow IPC record-batch message (`crate::ipc`), in 8-byte
/// words (so 8-byte aligned): the metadata (`head` words), then record ids, ranks, the `nints`
/// integer counters and the `nflts` double counters, one column of `n` values each, every word
/// holding the little-endian bytes of its value. Transposed straight into the message, so the
/// columns are written once.
#[derive(Debug, Clone)]
pub struct CounterTable {
    pub module: usize,
    pub shape: CounterShape,
    pub n: usize,
    pub head: usize,
    pub message: Vec<u64>,
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
    pub(super) rows: Vec<[i64; 7]>,
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

impl IoOps {
    /// Room for `rows` more rows in every column.
    pub fn reserve(&mut self, rows: usize) {
        self.source.reserve(rows);
        self.record_id.reserve(rows);
        self.rank.reserve(rows);
        self.seq.reserve(rows);
        self.op.reserve(rows);
        self.offset.reserve(rows);
        self.length.reserve(rows);
        self.start.reserve(rows);
        self.end.reserve(rows);
        self.host_idx.reserve(rows);
    }

    /// Drops every row from `rows` on and every host name from `hosts` on (a damaged module's).
    pub fn truncate(&mut self, rows: usize, hosts: usize) {
        self.source.truncate(rows);
        self.record_id.truncate(rows);
        self.rank.truncate(rows);
        self.seq.truncate(rows);
        self.op.truncate(rows);
        self.offset.truncate(rows);
        self.length.truncate(rows);
        self.start.truncate(rows);
        self.end.truncate(rows);
        self.host_idx.truncate(rows);
        self.hostnames.truncate(hosts);
    }
}

/// HEATMAP records: one row per (module record, rank); bins as lists sharing `offsets`.
#[derive(Debug, Default, Clone)]
pub struct HeatmapTable {
    pub record_id: Vec<i64>,
    pub rank: Vec<i64>,
    pub width: Vec<f64>,
    pub nbins: Vec<i64>,
    /// list offsets into `write` and `read` (n + 1 entries)
    pub offsets: Vec<i32>,
    pub write: Vec<i64>,
    pub read: Vec<i64>,
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
    pub heatmap: Option<HeatmapTable>,
    pub apmpi: Option<ApmpiTable>,
    pub apxc: Option<ApxcTable>,
    pub io_ops: Option<IoOps>,
    /// the DXT modules left to a `DxtStream` (`decode_with`), in module order
    pub dxt_parts: Vec<DxtPart>,
    /// the compressed regions: ("job" | "names" | module name, file offset, length)
    pub regions: Vec<(String, u64, u64)>,
    /// modules whose region was cut short or corrupt: (name, reason); their records are dropped
    pub damaged: Vec<(String, String)>,
    pub notes: Vec<String>,
}

/// The APMPI header record (the region's first record).
#[derive(Debug, Default, Clone)]
pub struct ApmpiHeader {
    pub id: i64,
    pub rank: i64,
    pub magic: i64,
    pub sync_flag: u32,
    pub variance_total_mpitime: f64,
    pub variance_total_mpisynctime: f64,
}

/// APMPI: the header record and one perf record per rank, counters row-major.
#[derive(Debug, Default, Clone)]
pub struct ApmpiTable {
    pub header: Option<ApmpiHeader>,
    pub ids: Vec<i64>,
    pub ranks: Vec<i64>,
    /// 396 u64 counters per record (as i64 bits)
    pub counters: Vec<i64>,
    /// 222 + 16 + 2 double counters per record
    pub fcounters: Vec<f64>,
    pub node_name: StrCol,
}

/// APXC: the header record (id, rank, magic, nblades, nchassis, ngroups, memory_mode,
/// cluster_mode, appid) and one perf record per router, row-major.
#[derive(Debug, Default, Clone)]
pub struct ApxcTable {
    pub header: Option<[i64; 9]>,
    pub ids: Vec<i64>,
    pub ranks: Vec<i64>,
    /// group, chassis, blade, node per record
    pub location: Vec<i64>,
    /// 392 u64 counters per record (as i64 bits)
    pub counters: Vec<i64>,
}
