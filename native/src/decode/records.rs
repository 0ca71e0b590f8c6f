//! Counter modules: records read into the current (darshan-util 3.5.0) layout (older versions
//! through `upconvert`), byte-swapped if the writer's byte order differs, then transposed to
//! columns.

use super::bytes::{rd_u64, wr_u64, Cursor};
use super::modules::{CounterShape, MODULE_NAMES};
use super::output::CounterTable;
use super::upconvert::{read_old_record, NoSwap};
use super::Res;

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
    let no_swap = if ver == shape.cur_ver {
        match cur.take(size) {
            Some(b) => rec.extend_from_slice(b),
            None => return Ok(false),
        }
        NoSwap::default()
    } else {
        match read_old_record(shape, ver, cur, rec)? {
            Some(no_swap) => no_swap,
            None => return Ok(false),
        }
    };
    if swap {
        let mut sw = |off: usize| {
            let v = rd_u64(rec, off).swap_bytes();
            wr_u64(rec, off, v);
        };
        sw(0);
        sw(8);
        if shape.pre > 0 && !no_swap.pre {
            sw(16);
        }
        let ib = 16 + 8 * shape.pre;
        for i in 0..shape.nints {
            if !no_swap.int(i) {
                sw(ib + 8 * i);
            }
        }
        let fb = ib + 8 * shape.nints;
        for i in 0..shape.nflts {
            if !no_swap.flt(i) {
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
    let copied: Vec<u8>;
    let (rows, n, left): (&[u8], usize, usize) = if ver == shape.cur_ver && !swap {
        // records already in the current layout and byte order: read in place (what
        // `read_counter_record` would copy record by record, up to the last whole one)
        let n = buf.len() / size;
        (&buf[..n * size], n, buf.len() - n * size)
    } else {
        let cap = buf.len() / size.clamp(16, 680) + 1;
        let mut rows: Vec<u8> = Vec::with_capacity(cap.min(1 << 20) * size);
        let mut cur = Cursor::new(buf);
        let mut rec = Vec::with_capacity(size);
        let mut n = 0usize;
        while read_counter_record(&shape, ver, swap, &mut cur, &mut rec)? {
            rows.extend_from_slice(&rec);
            n += 1;
        }
        copied = rows;
        (&copied, n, cur.left())
    };
    if left > 0 {
        notes.push(format!(
            "{}: {} trailing bytes after the last whole record ignored",
            MODULE_NAMES[shape.module],
            left
        ));
    }
    // transpose to columns, straight into the message
    let (mut message, head) = counter_message(&shape, n);
    let cols = &mut message[head..];
    let ib = 16 + 8 * shape.pre;
    let fb = ib + 8 * shape.nints;
    let (idr, cols) = cols.split_at_mut(2 * n);
    let (ids, ranks) = idr.split_at_mut(n);
    for ((id, rank), row) in ids.iter_mut().zip(ranks.iter_mut()).zip(rows.chunks_exact(size)) {
        *id = rd_u64(row, 0).to_le();
        *rank = rd_u64(row, 8).to_le();
    }
    // in blocks of rows, column by column within a block: the block's records stay in cache and
    // each column is written in runs (a row at a time would touch every column's page per row)
    const BLOCK: usize = 64;
    for r0 in (0..n).step_by(BLOCK) {
        let r1 = (r0 + BLOCK).min(n);
        let block = &rows[r0 * size..r1 * size];
        // integer and double counters alike: their 8 bytes as they are (the record is in host
        // byte order, the message little-endian)
        for c in 0..shape.nints + shape.nflts {
            let at = if c < shape.nints { ib + 8 * c } else { fb + 8 * (c - shape.nints) };
            let col = &mut cols[c * n + r0..c * n + r1];
            for (v, row) in col.iter_mut().zip(block.chunks_exact(size)) {
                *v = rd_u64(row, at).to_le();
            }
        }
    }
    Ok(CounterTable { module: shape.module, shape, n, head, message })
}

/// A zeroed counter-table message for `n` records of `shape`, its metadata written, and the
/// number of metadata words in front of the columns.
pub(super) fn counter_message(shape: &CounterShape, n: usize) -> (Vec<u64>, usize) {
    let ncols = 2 + shape.nints + shape.nflts;
    let (meta, body) = crate::ipc::batch_metadata(n, &vec![8; ncols]);
    // every part of the message is a multiple of 8 bytes (the metadata padded, 8-byte values)
    debug_assert!(meta.len() % 8 == 0 && body == 8 * n * ncols);
    let head = meta.len().div_ceil(8);
    let mut message = vec![0u64; head + n * ncols];
    for (w, c) in message.iter_mut().zip(meta.chunks(8)) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        *w = u64::from_ne_bytes(b);
    }
    (message, head)
}
