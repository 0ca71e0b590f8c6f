//! DXT_POSIX / DXT_MPIIO traces: one row per I/O segment, into the shared `IoOps` table.

use std::collections::HashMap;

use super::bytes::{cstr_bytes, word, Cursor};
use super::output::IoOps;
use super::{corrupt, Res};

pub(super) fn decode_dxt(src: u8, ver: u32, swap: bool, buf: &[u8], t: &mut IoOps, notes: &mut Vec<String>) -> Res<()> {
    let name = if src == 0 { "DXT_POSIX" } else { "DXT_MPIIO" };
    let mut cur = Cursor::new(buf);
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
        for (k, sb) in segs.chunks_exact(32).enumerate() {
            rec.push(t, k as u64, sb);
        }
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
