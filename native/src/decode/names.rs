//! Name records (record id -> path; the 3.00 and 3.10+ layouts) and each name's mount.

use std::collections::HashMap;

use super::bytes::{cstr, rd_u32, word};
use super::header::Header;
use super::{corrupt, Res};

pub(super) fn decode_names(h: &Header, buf: &[u8]) -> Res<Vec<(u64, String)>> {
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

/// For each path, the mount whose point is the longest path prefix of it (a mount point `m`
/// matches `p` when `p == m` or `p` starts with `m` without trailing slashes plus "/"); ties go
/// to the first such mount in table order.
pub(super) fn resolve_mounts(names: &[(u64, String)], mounts: &[(String, String)]) -> Vec<i32> {
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
