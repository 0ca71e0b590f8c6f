//! HEATMAP (Darshan 3.4+): per (module, rank), the bytes read and written in each time bin.
//!
//! A record is the in-memory `struct darshan_heatmap_record` as the runtime wrote it: base record
//! (id, rank), `bin_width_seconds` (double), `nbins` (int64) and two pointer slots (garbage on
//! disk), 48 bytes; then `nbins` write-bin and `nbins` read-bin int64 byte counts. The record id
//! is the hash of the name record `heatmap:<MODULE>` (POSIX, MPIIO, STDIO, DFS, DAOS).
//!
//! darshan-util (what pydarshan reads through) corrects records whose bin count is off by one
//! from the log's first record (runtime bug darshan-hpc/darshan#941, 3.4.0 - 3.4.3); this decoder
//! reproduces the correction bin for bin, including its shifted read bins in the one-short case.

use super::bytes::word;
use super::output::HeatmapTable;
use super::{corrupt, Res};

const FIXED: usize = 48;

pub(super) fn heatmap_table(ver_ok: bool, swap: bool, buf: &[u8], notes: &mut Vec<String>) -> Res<HeatmapTable> {
    let mut t = HeatmapTable { offsets: vec![0], ..Default::default() };
    if !ver_ok {
        return Ok(t);
    }
    let (mut first_nbins, mut first_width) = (0i64, 0f64);
    let mut pos = 0usize;
    while buf.len() - pos >= FIXED {
        let h = &buf[pos..pos + FIXED];
        let id = word(h, 0, swap) as i64;
        let rank = word(h, 8, swap) as i64;
        let width = f64::from_bits(word(h, 16, swap));
        let nbins = word(h, 24, swap) as i64;
        pos += FIXED;
        let n = match usize::try_from(nbins) {
            Ok(n) if n.checked_mul(16).is_some_and(|b| b <= buf.len() - pos) => n,
            _ => return corrupt(format!("HEATMAP: record of {nbins} bins overruns the region")),
        };
        if first_nbins == 0 {
            first_nbins = nbins;
        }
        if first_width == 0.0 {
            first_width = width;
        }
        // the record's bins as darshan-util holds them: write bins, then read bins, contiguous
        let mut mem: Vec<i64> = (0..2 * n).map(|k| word(buf, pos + 8 * k, swap) as i64).collect();
        pos += 16 * n;
        let (bins, read_at) = if width == first_width && nbins == first_nbins + 1 {
            (n - 1, n) // one bin too many: the last of each dropped
        } else if width == first_width && nbins == first_nbins - 1 {
            // one too few: darshan-util moves the read bins up one slot, zeroes the new write bin
            // (the read bins' first slot) and the last read slot; read bins keep their start
            mem.insert(n, 0);
            mem[2 * n] = 0;
            (n + 1, n)
        } else {
            (n, n)
        };
        t.record_id.push(id);
        t.rank.push(rank);
        t.width.push(width);
        t.nbins.push(bins as i64);
        t.write.extend_from_slice(&mem[..bins]);
        t.read.extend_from_slice(&mem[read_at..read_at + bins]);
        t.offsets.push(i32::try_from(t.write.len()).map_err(|_| super::DecodeErr {
            kind: super::ErrKind::Limit,
            msg: "HEATMAP: too many bins".into(),
        })?);
    }
    if pos < buf.len() {
        notes.push(format!("HEATMAP: {} trailing bytes ignored", buf.len() - pos));
    }
    Ok(t)
}
