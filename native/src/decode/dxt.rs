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
