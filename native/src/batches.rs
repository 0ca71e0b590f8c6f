//! Whole bronze tables as Arrow IPC record-batch messages (`crate::ipc::Batch`), built in Rust
//! so that Python reads each in one `pyarrow.ipc.read_record_batch` call: the one-row jobs
//! table, files, Lustre and the long APMPI table. Column order follows the bronze schemas; the reader supplies
//! the schema and `readers/native_darshan.py` checks that it has the shape written here.

use crate::decode::{ApmpiTable, LustreTable, Log};
use crate::ipc::Batch;

/// bronze/jobs (one row): jobid, uid, nprocs, start and end times, run_time_s, exe, metadata
/// (map of string to string), log_ver, mounts (list of (mount_point, fs_type) structs).
/// None when a string column would exceed 2 GiB.
pub fn jobs_batch(log: &Log) -> Option<Vec<u8>> {
    let j = &log.job;
    let mut b = Batch::new(1, 18, 1024);
    for v in [j.jobid, j.uid, j.nprocs, j.start_time_sec, j.start_time_nsec, j.end_time_sec, j.end_time_nsec] {
        b.i64s(std::iter::once(v), None);
    }
    b.f64s(std::iter::once(j.run_time), None);
    b.strs(std::iter::once(j.exe.as_bytes()))?;
    pairs(&mut b, &j.metadata)?; // map: entries struct<key, value>
    b.strs(std::iter::once(log.version.as_bytes()))?;
    pairs(&mut b, &j.mounts)?; // list<struct<mount_point, fs_type>>
    Some(b.finish())
}

/// bronze/files: record_id, name, then the name's mount point and file system type (null for a
/// name under no mount). None when a string column would exceed 2 GiB or the names and their
/// mounts disagree in number.
pub fn files_batch(log: &Log) -> Option<Vec<u8>> {
    let n = log.names.len();
    if log.name_mount.len() != n {
        return None;
    }
    let mounts = &log.job.mounts;
    let mount: Vec<Option<&(String, String)>> = log.name_mount.iter().map(|&m| usize::try_from(m).ok().and_then(|k| mounts.get(k))).collect();
    let valid: Vec<bool> = mount.iter().map(Option::is_some).collect();
    let bytes: usize = log.names.iter().map(|(_, s)| 16 + s.len()).sum();
    let mut b = Batch::new(n, 4, bytes + 8 * n);
    b.i64s(log.names.iter().map(|(id, _)| *id as i64), None);
    b.strs(log.names.iter().map(|(_, s)| s.as_bytes()))?;
    b.strs_valid(mount.iter().map(|m| m.map_or(&b""[..], |(p, _)| p.as_bytes())), Some(&valid))?;
    b.strs_valid(mount.iter().map(|m| m.map_or(&b""[..], |(_, t)| t.as_bytes())), Some(&valid))?;
    Some(b.finish())
}

/// bronze/lustre, one row per component: record_id, rank, component, the 7 component counters,
/// the pool name and the component's OST ids (a list). None when its columns disagree in length.
pub fn lustre_batch(t: &LustreTable) -> Option<Vec<u8>> {
    let n = t.record_id.len();
    let ncounters = 7;
    if t.rank.len() != n || t.component.len() != n || t.counters.len() != ncounters * n || t.pool_name.len() != n || t.ost_offsets.len() != n + 1 {
        return None;
    }
    let osts = usize::try_from(*t.ost_offsets.last()?).ok()?;
    if osts != t.ost_ids.len() {
        return None;
    }
    let bytes = n * 8 * (ncounters + 4) + t.pool_name.data.len() + 8 * osts;
    let mut b = Batch::new(n, ncounters + 6, bytes);
    b.i64s(t.record_id.iter().copied(), None);
    b.i64s(t.rank.iter().copied(), None);
    b.i32s(t.component.iter().copied(), None);
    for c in 0..ncounters {
        b.i64s(t.counters[c * n..(c + 1) * n].iter().copied(), None);
    }
    let p = &t.pool_name;
    let pool = |r: usize| p.data.get(p.offsets[r] as usize..p.offsets[r + 1] as usize);
    if (0..n).any(|r| pool(r).is_none()) {
        return None;
    }
    b.strs((0..n).map(|r| pool(r).unwrap_or_default()))?;
    b.list(&t.ost_offsets);
    b.i64s(t.ost_ids.iter().copied(), None);
    Some(b.finish())
}

/// One row's list (or map) of two-string structs.
fn pairs(b: &mut Batch, items: &[(String, String)]) -> Option<()> {
    b.list(&[0, i32::try_from(items.len()).ok()?]);
    b.structs(items.len());
    b.strs(items.iter().map(|(k, _)| k.as_bytes()))?;
    b.strs(items.iter().map(|(_, v)| v.as_bytes()))
}

/// Where bronze/apmpi's counter columns come from in a rank record: for each column (in schema
/// order) whether it is a double counter, and per MPI operation the index of its counter in
/// the record's integer or double counters (-1: the operation has none, a null).
#[derive(Debug, Clone, Default)]
pub struct ApmpiLayout {
    pub ops: Vec<String>,
    pub counters: Vec<(bool, Vec<i64>)>,
}

/// bronze/apmpi, one row per rank record and MPI operation: record_id, rank, node_name, op, the
/// layout's counter columns, then sync_flag and the two variances of the header (null without
/// one). None when the layout does not fit the records (an index past the record's counters).
pub fn apmpi_batch(t: &ApmpiTable, layout: &ApmpiLayout) -> Option<Vec<u8>> {
    let (n, nops) = (t.ids.len(), layout.ops.len());
    let m = n * nops;
    if t.ranks.len() != n || t.node_name.len() != n {
        return None;
    }
    let (nint, nflt) = (t.counters.len() / n, t.fcounters.len() / n);
    let per_rank = |v: &[i64]| v.iter().flat_map(move |&x| std::iter::repeat_n(x, nops)).collect::<Vec<_>>();
    let mut b = Batch::new(m, layout.counters.len() + 7, m * 8 * (layout.counters.len() + 6));
    b.i64s(per_rank(&t.ids).into_iter(), None);
    b.i64s(per_rank(&t.ranks).into_iter(), None);
    let node = |r: usize| &t.node_name.data[t.node_name.offsets[r] as usize..t.node_name.offsets[r + 1] as usize];
    b.strs((0..m).map(|i| node(i / nops)))?;
    b.strs((0..m).map(|i| layout.ops[i % nops].as_bytes()))?;
    for (flt, idx) in &layout.counters {
        if idx.len() != nops || idx.iter().any(|&k| k >= if *flt { nflt } else { nint } as i64) {
            return None;
        }
        let valid: Vec<bool> = (0..m).map(|i| idx[i % nops] >= 0).collect();
        let at = |i: usize| (i / nops, usize::try_from(idx[i % nops]).ok());
        if *flt {
            let v = (0..m).map(|i| match at(i) {
                (r, Some(k)) => t.fcounters[r * nflt + k],
                _ => 0.0,
            });
            b.f64s(v, Some(&valid));
        } else {
            let v = (0..m).map(|i| match at(i) {
                (r, Some(k)) => t.counters[r * nint + k],
                _ => 0,
            });
            b.i64s(v, Some(&valid));
        }
    }
    match &t.header {
        Some(h) => {
            b.i32s(std::iter::repeat_n(h.sync_flag as i32, m), None);
            b.f64s(std::iter::repeat_n(h.variance_total_mpitime, m), None);
            b.f64s(std::iter::repeat_n(h.variance_total_mpisynctime, m), None);
        }
        None => {
            b.nulls(m, 4);
            b.nulls(m, 8);
            b.nulls(m, 8);
        }
    }
    Some(b.finish())
}
