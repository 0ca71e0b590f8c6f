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
    let mut nodes = Vec::with_capacity(widths.len());
    let mut bufs = Vec::with_capacity(2 * widths.len());
    let mut body = 0usize;
    for w in widths {
        let len = w * n;
        nodes.push((n, 0));
        bufs.push((body, 0)); // validity: none
        bufs.push((body, len));
        body += len.div_ceil(8) * 8;
    }
    (message_metadata(n, &nodes, &bufs, body), body)
}

/// The metadata (with its 8-byte prefix) of a record batch of `n` rows: its field nodes
/// (length, null count) and buffers (offset in the body, length), depth first as the schema
/// lists them, and the body's length.
pub fn message_metadata(n: usize, nodes: &[(usize, usize)], bufs: &[(usize, usize)], body: usize) -> Vec<u8> {
    // flatbuffer positions (relative to its start)
    let msg_vt = 4usize; // Message vtable: 4 fields
    let msg = 16usize; // Message table (8-aligned): soffset, header, bodyLength, version, type
    let rb_vt = msg + 24; // RecordBatch vtable: 3 fields
    let rb = rb_vt + 16; // RecordBatch table (8-aligned): soffset, nodes, length, buffers
    let node_at = rb + 28; // vector: u32 count at = 4 mod 8, then 16-byte structs
    let buf_at = node_at + 4 + 16 * nodes.len() + 4;
    let end = buf_at + 4 + 16 * bufs.len();
    let fb_len = end.div_ceil(8) * 8;
    let mut b = vec![0u8; 8 + fb_len];
    b[..4].copy_from_slice(&[0xff; 4]);
    put_u32(&mut b, 4, fb_len as u32);
    let fb = &mut b[8..];

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
    put_u32(fb, rb + 4, (node_at - (rb + 4)) as u32);
    put_i64(fb, rb + 8, n as i64);
    put_u32(fb, rb + 16, (buf_at - (rb + 16)) as u32);
    put_u32(fb, node_at, nodes.len() as u32);
    for (i, (len, nulls)) in nodes.iter().enumerate() {
        put_i64(fb, node_at + 4 + 16 * i, *len as i64);
        put_i64(fb, node_at + 12 + 16 * i, *nulls as i64);
    }
    put_u32(fb, buf_at, bufs.len() as u32);
    for (i, (off, len)) in bufs.iter().enumerate() {
        put_i64(fb, buf_at + 4 + 16 * i, *off as i64);
        put_i64(fb, buf_at + 12 + 16 * i, *len as i64);
    }
    b
}

/// A record batch of any layout, assembled column by column in schema order (depth first: a
/// list or struct column's node, then its children), then written as one IPC message. Each
/// call appends one field node and that field's buffers as the Arrow format orders them.
pub struct Batch {
    n: usize,
    nodes: Vec<(usize, usize)>,
    bufs: Vec<(usize, usize)>,
    /// room for the metadata (`base` bytes, zeros until `finish`), then the body
    out: Vec<u8>,
    base: usize,
}

/// The length of a message's metadata (with its prefix) for this many nodes and buffers.
fn metadata_len(nodes: usize, bufs: usize) -> usize {
    let end = 16 + 24 + 16 + 28 + 4 + 16 * nodes + 4 + 4 + 16 * bufs;
    8 + end.div_ceil(8) * 8
}

impl Batch {
    /// A batch of `n` rows of at most `fields` field nodes (three buffers each at most), whose
    /// body takes about `bytes` bytes: the metadata is written in front of the body at the end,
    /// into room kept for it, so that the message is never copied to put them together.
    pub fn new(n: usize, fields: usize, bytes: usize) -> Self {
        let base = metadata_len(fields, 3 * fields);
        let mut out = Vec::with_capacity(base + bytes);
        out.resize(base, 0);
        Batch { n, nodes: Vec::new(), bufs: Vec::new(), out, base }
    }

    /// Appends one buffer (8-byte aligned in the body) written by `fill` (all `len` bytes).
    fn buffer_with(&mut self, len: usize, fill: impl FnOnce(&mut Vec<u8>)) {
        let at = self.out.len();
        self.out.reserve(len.div_ceil(8) * 8);
        fill(&mut self.out);
        debug_assert_eq!(self.out.len(), at + len);
        self.bufs.push((at - self.base, self.out.len() - at));
        self.out.resize(self.out.len().div_ceil(8) * 8, 0);
    }

    /// A validity bitmap (`None`: every value valid, no buffer) and the field's node.
    fn node(&mut self, len: usize, valid: Option<&[bool]>) {
        match valid {
            Some(v) if v.iter().any(|ok| !ok) => {
                let nulls = v.iter().filter(|ok| !**ok).count();
                self.nodes.push((len, nulls));
                self.buffer_with(len.div_ceil(8), |b| {
                    b.extend(v.chunks(8).map(|c| c.iter().enumerate().fold(0u8, |m, (i, ok)| m | ((*ok as u8) << i))))
                });
            }
            _ => {
                self.nodes.push((len, 0));
                self.bufs.push((self.out.len() - self.base, 0));
            }
        }
    }

    /// A column of 64-bit integers, null where `valid` says false.
    pub fn i64s(&mut self, v: impl ExactSizeIterator<Item = i64>, valid: Option<&[bool]>) {
        self.node(v.len(), valid);
        self.values(v.map(i64::to_le_bytes));
    }

    pub fn f64s(&mut self, v: impl ExactSizeIterator<Item = f64>, valid: Option<&[bool]>) {
        self.node(v.len(), valid);
        self.values(v.map(f64::to_le_bytes));
    }

    pub fn i32s(&mut self, v: impl ExactSizeIterator<Item = i32>, valid: Option<&[bool]>) {
        self.node(v.len(), valid);
        self.values(v.map(i32::to_le_bytes));
    }

    /// A buffer of fixed-width values (their little-endian bytes), written in place.
    fn values<const W: usize>(&mut self, v: impl ExactSizeIterator<Item = [u8; W]>) {
        let len = W * v.len();
        self.buffer_with(len, |b| {
            let at = b.len();
            b.resize(at + len, 0);
            for (d, x) in b[at..].chunks_exact_mut(W).zip(v) {
                d.copy_from_slice(&x);
            }
        });
    }

    /// A column of `len` nulls of a fixed-width type of `width` bytes.
    pub fn nulls(&mut self, len: usize, width: usize) {
        self.null_node(len);
        self.buffer_with(width * len, |b| b.resize(b.len() + width * len, 0));
    }

    fn null_node(&mut self, len: usize) {
        self.nodes.push((len, len));
        self.buffer_with(len.div_ceil(8), |b| b.resize(b.len() + len.div_ceil(8), 0));
    }

    /// A string column of the given values (no nulls); None when they exceed 2 GiB.
    pub fn strs<'a>(&mut self, v: impl Iterator<Item = &'a [u8]> + Clone) -> Option<()> {
        self.strs_valid(v, None)
    }

    /// A string column of the given values, null where `valid` says false (a null's value is
    /// still written, usually empty); None when they exceed 2 GiB.
    pub fn strs_valid<'a>(&mut self, v: impl Iterator<Item = &'a [u8]> + Clone, valid: Option<&[bool]>) -> Option<()> {
        let (mut len, mut total) = (0usize, 0usize);
        for s in v.clone() {
            len += 1;
            total += s.len();
        }
        if total > i32::MAX as usize {
            return None;
        }
        self.node(len, valid);
        let offsets = v.clone();
        self.buffer_with(4 * (len + 1), |b| {
            let at = b.len();
            b.resize(at + 4 * (len + 1), 0); // the first offset: 0
            let mut end = 0i32;
            for (d, s) in b[at + 4..].chunks_exact_mut(4).zip(offsets) {
                end += s.len() as i32;
                d.copy_from_slice(&end.to_le_bytes());
            }
        });
        self.buffer_with(total, |b| {
            let mut at = b.len();
            b.resize(at + total, 0);
            for s in v {
                b[at..at + s.len()].copy_from_slice(s);
                at += s.len();
            }
        });
        Some(())
    }

    /// A list (or map) column of `offsets.len() - 1` rows (no nulls); its child comes next.
    pub fn list(&mut self, offsets: &[i32]) {
        self.node(offsets.len().saturating_sub(1), None);
        self.buffer_with(4 * offsets.len(), |b| offsets.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes())));
    }

    /// A struct column of `len` rows (no nulls); its children come next.
    pub fn structs(&mut self, len: usize) {
        self.node(len, None);
    }

    /// The IPC message: its metadata (padded to the room kept for it), then the body.
    pub fn finish(mut self) -> Vec<u8> {
        let meta = message_metadata(self.n, &self.nodes, &self.bufs, self.out.len() - self.base);
        if meta.len() <= self.base {
            self.out[..meta.len()].copy_from_slice(&meta);
            put_u32(&mut self.out, 4, (self.base - 8) as u32); // the flatbuffer, then zeros
            self.out
        } else {
            let mut whole = meta;
            whole.extend_from_slice(&self.out[self.base..]);
            whole
        }
    }
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

    #[test]
    fn batch_keeps_room_for_its_metadata_and_aligns_buffers() {
        let mut b = Batch::new(3, 4, 0);
        b.i64s([1i64, 2, 3].into_iter(), Some(&[true, false, true]));
        b.strs([&b"ab"[..], b"", b"c"].into_iter()).unwrap();
        b.nulls(3, 4);
        let (m, base) = (b.finish(), metadata_len(4, 12));
        assert_eq!(u32::from_le_bytes(m[4..8].try_into().unwrap()) as usize, base - 8);
        // body: validity (1 byte, padded), values, offsets, data, then the nulls' bitmap and values
        let body = &m[base..];
        assert_eq!(body[0], 0b101);
        assert_eq!(&body[8..32], &[1i64, 2, 3].map(i64::to_le_bytes).concat()[..]);
        assert_eq!(&body[32..48], &[0i32, 2, 2, 3].map(i32::to_le_bytes).concat()[..]);
        assert_eq!(&body[48..51], b"abc");
        assert_eq!(body.len(), 56 + 8 + 16);
    }

    #[test]
    fn batch_with_more_fields_than_room_still_writes_its_metadata_first() {
        let mut b = Batch::new(1, 1, 0);
        for v in 0..5i64 {
            b.i64s(std::iter::once(v), None);
        }
        let m = b.finish();
        let meta = u32::from_le_bytes(m[4..8].try_into().unwrap()) as usize + 8;
        assert_eq!(meta, metadata_len(5, 10));
        assert_eq!(&m[meta + 32..meta + 40], &4i64.to_le_bytes());
    }
}
