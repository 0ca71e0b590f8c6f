//! AutoPerf's APMPI (per-rank MPI call counters) and APXC (Cray XC Aries router counters), module
//! format version 1, as argonne-lcf/autoperf writes them (`apmpi/darshan-apmpi-log-format.h`,
//! `apxc/darshan-apxc-log-format.h`) and its darshan-util readers (`darshan-apmpi-logutils.c`,
//! `darshan-apxc-logutils.c`, what pydarshan's `mod_read_all_apmpi_records` /
//! `mod_read_all_apxc_records` read through) read them.
//!
//! Each region holds one header record (the first record of the region), then fixed-size
//! per-rank (APMPI) or per-router (APXC) records until the region ends; a record cut short ends
//! the region, as `darshan_log_get_mod` returning fewer bytes than a record ends darshan-util's
//! loop. Layouts (C structs, 8-byte aligned):
//!
//! * APMPI header, 48 bytes: base record (id, rank), `magic` i64, `sync_flag` u32 (+4 padding),
//!   `apmpi_f_variance_total_mpitime`, `apmpi_f_variance_total_mpisynctime` doubles.
//! * APMPI perf, 5232 bytes: base record, `counters[396]` u64, `fcounters[222]` (total/min/max
//!   time per MPI op), `fsynccounters[16]`, `fglobalcounters[2]` doubles, `node_name[128]`.
//! * APXC header, 72 bytes: base record, `magic`, `nblades`, `nchassis`, `ngroups`,
//!   `memory_mode`, `cluster_mode` i64, `appid` u64.
//! * APXC perf, 3184 bytes: base record, `group`, `chassis`, `blade`, `node` i64, `counters[392]`.
//!
//! Big-endian logs: every field is swapped by its own width here. (The autoperf readers swap the
//! APXC header's fields in the APMPI reader too, so darshan-util gives no oracle for them; no
//! big-endian AutoPerf log is known.)

use super::bytes::{cstr, rd_u32, word};
use super::output::{ApmpiTable, ApxcTable, StrCol};
use super::Res;

pub const APMPI_NCOUNTERS: usize = 396;
/// fcounters (222) + fsynccounters (16) + fglobalcounters (2), in that order
pub const APMPI_NFCOUNTERS: usize = 240;
const APMPI_HEADER: usize = 48;
const APMPI_PERF: usize = 16 + 8 * (APMPI_NCOUNTERS + APMPI_NFCOUNTERS) + 128;

pub const APXC_NCOUNTERS: usize = 392;
const APXC_HEADER: usize = 72;
const APXC_PERF: usize = 16 + 8 * (4 + APXC_NCOUNTERS);

/// The version both readers know (`DARSHAN_APMPI_VER`, `DARSHAN_APXC_VER`).
pub(super) const AUTOPERF_VER: u32 = 1;

fn version_note(module: &str, ver: u32, notes: &mut Vec<String>) -> bool {
    if ver == AUTOPERF_VER {
        return true;
    }
    notes.push(format!(
        "module {module} version {ver} not decoded: only version {AUTOPERF_VER} is known (the \
         AutoPerf reader darshan-util uses reads no other), no records"
    ));
    false
}

pub(super) fn apmpi_table(ver: u32, swap: bool, buf: &[u8], notes: &mut Vec<String>) -> Res<ApmpiTable> {
    let mut t = ApmpiTable { node_name: StrCol::new(), ..Default::default() };
    if !version_note("APMPI", ver, notes) {
        return Ok(t);
    }
    if buf.len() < APMPI_HEADER {
        notes.push(format!("APMPI: region of {} bytes holds no header record", buf.len()));
        return Ok(t);
    }
    let h = &buf[..APMPI_HEADER];
    let sync = rd_u32(h, 24);
    t.header = Some(super::output::ApmpiHeader {
        id: word(h, 0, swap) as i64,
        rank: word(h, 8, swap) as i64,
        magic: word(h, 16, swap) as i64,
        sync_flag: if swap { sync.swap_bytes() } else { sync },
        variance_total_mpitime: f64::from_bits(word(h, 32, swap)),
        variance_total_mpisynctime: f64::from_bits(word(h, 40, swap)),
    });
    let mut pos = APMPI_HEADER;
    while buf.len() - pos >= APMPI_PERF {
        let r = &buf[pos..pos + APMPI_PERF];
        t.ids.push(word(r, 0, swap) as i64);
        t.ranks.push(word(r, 8, swap) as i64);
        let mut o = 16;
        for _ in 0..APMPI_NCOUNTERS {
            t.counters.push(word(r, o, swap) as i64);
            o += 8;
        }
        for _ in 0..APMPI_NFCOUNTERS {
            t.fcounters.push(f64::from_bits(word(r, o, swap)));
            o += 8;
        }
        t.node_name.push(&cstr(&r[o..o + 128]))?;
        pos += APMPI_PERF;
    }
    trailing_note("APMPI", buf.len() - pos, APMPI_PERF, notes);
    Ok(t)
}

/// The note for a region's bytes after its last whole version-1 record (none when it has none).
fn trailing_note(module: &str, rest: usize, record: usize, notes: &mut Vec<String>) {
    if rest > 0 {
        notes.push(format!(
            "{module}: {rest} trailing bytes ignored (less than one {record}-byte record of \
             version 1: a writer with another layout under the same version number)"
        ));
    }
}

pub(super) fn apxc_table(ver: u32, swap: bool, buf: &[u8], notes: &mut Vec<String>) -> Res<ApxcTable> {
    let mut t = ApxcTable::default();
    if !version_note("APXC", ver, notes) {
        return Ok(t);
    }
    if buf.len() < APXC_HEADER {
        notes.push(format!("APXC: region of {} bytes holds no header record", buf.len()));
        return Ok(t);
    }
    let mut h = [0i64; 9];
    for (k, v) in h.iter_mut().enumerate() {
        *v = word(buf, 8 * k, swap) as i64;
    }
    t.header = Some(h);
    let mut pos = APXC_HEADER;
    while buf.len() - pos >= APXC_PERF {
        let r = &buf[pos..pos + APXC_PERF];
        t.ids.push(word(r, 0, swap) as i64);
        t.ranks.push(word(r, 8, swap) as i64);
        for k in 0..4 {
            t.location.push(word(r, 16 + 8 * k, swap) as i64);
        }
        for k in 0..APXC_NCOUNTERS {
            t.counters.push(word(r, 48 + 8 * k, swap) as i64);
        }
        pos += APXC_PERF;
    }
    trailing_note("APXC", buf.len() - pos, APXC_PERF, notes);
    Ok(t)
}
