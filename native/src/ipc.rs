//! One Arrow IPC record-batch message (encapsulated: continuation marker, metadata length,
//! the `Message` flatbuffer, then the body) for a batch of fixed-width columns without nulls,
//! so that Python builds a whole table in one `pyarrow.ipc.read_record_batch` call instead of
//! one array per column. The schema is not written: the reader supplies it.
//!
//! Layout from the Arrow columnar format, "Serialization and Interprocess Communication (IPC)"
//! and `format/Message.fbs` / `Schema.fbs` (Message { version, header_type, header, bodyLength },
//! RecordBatch { length, nodes: [FieldNode], buffers: [Buffer] }; FieldNode { length,
//! null_count }, Buffer { offset, length }: structs of two i64). The flatbuffer is written
//! front to back by hand: every forward reference (uoffset) points to a later position, and each
//! table names its vtable by a signed offset, as the flatbuffers binary format allows.

/// MetadataVersion.V5
const V5: i16 = 4;
/// MessageHeader.RecordBatch
const RECORD_BATCH: u8 = 3;

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_i64(b: &mut [u8], at: usize, v: i64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The metadata of a record batch of `n` rows whose columns hold `widths[i]` bytes per value,
/// each column's values one after the other in the body (each 8-byte aligned, no validity
/// buffer). Returns (metadata with its 8-byte prefix, body length).
pub fn batch_metadata(n: usize, widths: &[usize]) -> (Vec<u8>, usize) {
    let ncols = widths.len();
    // flatbuffer positions (relative to its start)
    let msg_vt = 4usize; // Message vtable: 4 fields
    let msg = 16usize; // Message table (8-aligned): soffset, header, bodyLength, version, type
    let rb_vt = msg + 24; // RecordBatch vtable: 3 fields
    let rb = rb_vt + 16; // RecordBatch table (8-aligned): soffset, nodes, length, buffers
    let nodes = rb + 28; // vector: u32 count at = 4 mod 8, then 16-byte structs
    let buffers = nodes + 4 + 16 * ncols + 4;
    let end = buffers + 4 + 32 * ncols;
    let fb_len = end.div_ceil(8) * 8;
    let mut b = vec![0u8; 8 + fb_len];
    b[..4].copy_from_slice(&[0xff; 4]);
    put_u32(&mut b, 4, fb_len as u32);
    let fb = &mut b[8..];

    let mut body = 0usize;
    let mut bufs = Vec::with_capacity(ncols);
    for w in widths {
        let len = w * n;
        bufs.push((body, len));
        body += len.div_ceil(8) * 8;
    }

    put_u32(fb, 0, msg as u32); // root
    // Message vtable: size, table size, version@16, header_type@18, header@4, bodyLength@8
    for (k, v) in [12u16, 20, 16, 18, 4, 8].into_iter().enumerate() {
        put_u16(fb, msg_vt + 2 * k, v);
    }
    put_u32(fb, msg, (msg - msg_vt) as u32); // soffset (i32): table - vtable
    put_u32(fb, msg + 4, (rb - (msg + 4)) as u32);
    put_i64(fb, msg + 8, body as i64);
    fb[msg + 16..msg + 18].copy_from_slice(&V5.to_le_bytes());
    fb[msg + 18] = RECORD_BATCH;
    // RecordBatch vtable: size, table size, length@8, nodes@4, buffers@16
    for (k, v) in [10u16, 24, 8, 4, 16].into_iter().enumerate() {
        put_u16(fb, rb_vt + 2 * k, v);
    }
    put_u32(fb, rb, (rb - rb_vt) as u32);
    put_u32(fb, rb + 4, (nodes - (rb + 4)) as u32);
    put_i64(fb, rb + 8, n as i64);
    put_u32(fb, rb + 16, (buffers - (rb + 16)) as u32);
    put_u32(fb, nodes, ncols as u32);
    for i in 0..ncols {
        put_i64(fb, nodes + 4 + 16 * i, n as i64);
        put_i64(fb, nodes + 12 + 16 * i, 0);
    }
    put_u32(fb, buffers, (2 * ncols) as u32);
    for (i, (off, len)) in bufs.iter().enumerate() {
        let at = buffers + 4 + 32 * i;
        put_i64(fb, at, *off as i64); // validity: none
        put_i64(fb, at + 8, 0);
        put_i64(fb, at + 16, *off as i64);
        put_i64(fb, at + 24, *len as i64);
    }
    (b, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_aligned() {
        for ncols in [0usize, 1, 2, 7, 90] {
            let (m, body) = batch_metadata(3, &vec![8; ncols]);
            assert_eq!(m.len() % 8, 0);
            assert_eq!(u32::from_le_bytes(m[4..8].try_into().unwrap()) as usize, m.len() - 8);
            assert_eq!(body, 24 * ncols);
            let fb = &m[8..];
            let nodes = 16 + 24 + 16 + 28;
            assert_eq!((nodes + 4) % 8, 0);
            assert_eq!(u32::from_le_bytes(fb[nodes..nodes + 4].try_into().unwrap()) as usize, ncols);
        }
    }
}
