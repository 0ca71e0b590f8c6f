//! DXT_POSIX / DXT_MPIIO traces: one row per I/O segment, into the shared `IoOps` table.

use std::collections::HashMap;

use super::bytes::{cstr_bytes, word, Cursor};
use super::output::IoOps;
use super::{corrupt, Res};

pub(super) fn decode_dxt(src: u8, ver: u32, swap: bool, buf: &[u8], t: &mut IoOps, notes: &mut Vec<String>) -> Res<()> {
    let name = if src == 0 { "DXT_POSIX" } else { "DXT_MPIIO" };
    let mut cur = Cursor::new(buf);
    // at most one row per 32 bytes of the region: room for them all at once, not by doubling
    t.reserve(buf.len() / 32);
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
        let hi = host_index(&mut hosts, &mut t.hostnames, host);
        let rec = SegRec { src, ver, swap, id, rank, wc: wc as u64, host: hi };
        rec.push_all(t, segs);
    }
    Ok(())
}

/// The index of `host` in `names`, added (and to `hosts`, the lookup) when new.
pub(super) fn host_index(hosts: &mut HashMap<Vec<u8>, u32>, names: &mut Vec<String>, host: &[u8]) -> u32 {
    if let Some(&i) = hosts.get(host) {
        return i;
    }
    let i = names.len() as u32;
    names.push(String::from_utf8_lossy(host).into_owned());
    hosts.insert(host.to_vec(), i);
    i
}

/// What a DXT record gives each of its segments' rows.
pub(super) struct SegRec {
    pub src: u8,
    pub ver: u32,
    pub swap: bool,
    pub id: i64,
    pub rank: i64,
    /// the record's write count: segments 0..wc are writes, the rest reads
    pub wc: u64,
    pub host: u32,
}

impl SegRec {
    /// Appends the rows of every segment in `segs` (32 bytes each, from segment 0 on): what
    /// `push` does segment by segment, a column at a time.
    pub fn push_all(&self, t: &mut IoOps, segs: &[u8]) {
        use std::iter::repeat_n;
        let n = segs.len() / 32;
        let wc = usize::try_from(self.wc).unwrap_or(usize::MAX).min(n);
        let swap = self.swap;
        t.source.extend(repeat_n(self.src, n));
        t.record_id.extend(repeat_n(self.id, n));
        t.rank.extend(repeat_n(self.rank, n));
        t.seq.extend((0..wc as i64).chain(0..(n - wc) as i64));
        t.op.extend(repeat_n(0u8, wc).chain(repeat_n(1u8, n - wc)));
        // DXT_MPIIO version 1 did not record offsets
        if self.src == 1 && self.ver == 1 {
            t.offset.extend(repeat_n(-1i64, n));
        } else {
            t.offset.extend(segs.chunks_exact(32).map(|sb| word(sb, 0, swap) as i64));
        }
        t.length.extend(segs.chunks_exact(32).map(|sb| word(sb, 8, swap) as i64));
        t.start.extend(segs.chunks_exact(32).map(|sb| f64::from_bits(word(sb, 16, swap))));
        t.end.extend(segs.chunks_exact(32).map(|sb| f64::from_bits(word(sb, 24, swap))));
        t.host_idx.extend(repeat_n(self.host, n));
    }

    /// Appends the row of segment `k` (its 32 bytes `sb`) to `t`.
    pub fn push(&self, t: &mut IoOps, k: u64, sb: &[u8]) {
        let (op, seq) = if k < self.wc { (0u8, k as i64) } else { (1u8, (k - self.wc) as i64) };
        t.source.push(self.src);
        t.record_id.push(self.id);
        t.rank.push(self.rank);
        t.seq.push(seq);
        t.op.push(op);
        let off = word(sb, 0, self.swap) as i64;
        // DXT_MPIIO version 1 did not record offsets
        t.offset.push(if self.src == 1 && self.ver == 1 { -1 } else { off });
        t.length.push(word(sb, 8, self.swap) as i64);
        t.start.push(f64::from_bits(word(sb, 16, self.swap)));
        t.end.push(f64::from_bits(word(sb, 24, self.swap)));
        t.host_idx.push(self.host);
    }
}
