//! Counter modules: records read into the current (darshan-util 3.5.0) layout, with
//! darshan-util's version up-conversions byte for byte, then transposed to columns.

use super::bytes::{rd_u64, wr_u64, Cursor};
use super::modules::{CounterShape, MODULE_NAMES, M_H5D, M_H5F, M_MPIIO, M_PNC_FILE, M_POSIX, M_STDIO};
use super::output::CounterTable;
use super::{corrupt, Res};

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

pub(super) fn decode_counter_module(
    shape: CounterShape,
    ver: u32,
    swap: bool,
    buf: &[u8],
    notes: &mut Vec<String>,
) -> Res<CounterTable> {
    let size = shape.size();
    let cap = buf.len() / size.clamp(16, 680) + 1;
    let mut rows: Vec<u8> = Vec::with_capacity(cap.min(1 << 20) * size);
    let mut cur = Cursor::new(buf);
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
