//! LUSTRE records (v1: one stripe layout; v2: components), one row per component.

use super::bytes::{cstr, word, Cursor};
use super::output::{LustreTable, StrCol};
use super::{DecodeErr, ErrKind, Res};

/// The LUSTRE table of a module region (empty when `ver_ok` is false: a version this decoder
/// does not know), its 7 counters column-major.
pub(super) fn lustre_table(ver_ok: bool, ver: u32, swap: bool, raw: &[u8], notes: &mut Vec<String>) -> Res<LustreTable> {
    let mut t = LustreTable { ost_offsets: vec![0], pool_name: StrCol::new(), ..Default::default() };
    if ver_ok {
        decode_lustre(ver, swap, raw, &mut t, notes)?;
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
    Ok(t)
}

fn decode_lustre(ver: u32, swap: bool, buf: &[u8], t: &mut LustreTable, notes: &mut Vec<String>) -> Res<()> {
    let mut cur = Cursor::new(buf);
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
