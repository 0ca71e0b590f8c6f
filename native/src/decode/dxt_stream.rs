//! DXT_POSIX / DXT_MPIIO regions decoded in bounded memory: a validating scan while the log is
//! decoded, then the segments in batches of at most N rows.
//!
//! Record layout (darshan-util's darshan-dxt-logutils.c, `darshan_log_get_dxt_file`, and
//! darshan-dxt-log-format.h): a 104-byte `dxt_file_record` — base record id (u64 @0), rank
//! (i64 @8), shared_record (i64 @16), hostname (char[64] @24..88), write_count (i64 @88),
//! read_count (i64 @96) — then write_count + read_count 32-byte `segment_info`s (offset, length,
//! start time f64, end time f64), the writes first; all in the writer's byte order. DXT_MPIIO
//! version 1 recorded no offsets (-1 here, as in `decode_dxt`).
//!
//! The results equal `decode_dxt`'s on the whole region, notes and errors included. The one
//! fact `decode_dxt` has that a stream lacks — the decompressed length, against which it checks
//! each record's segments ("segments past the region end; stopped") — and every error it can
//! raise (an inflate error, a negative segment count) come from `scan_dxt`, run in `decode` in
//! the module's turn: it inflates the region once without keeping it, so a damaged module is
//! dropped whole with `decode_dxt`'s note, before any of its rows exist. `DxtStream` then
//! inflates the region again and emits the rows; it can only fail if the bytes changed between
//! the two passes (a corrupt error then; rows already handed out stay handed out).

use std::collections::HashMap;

use super::bytes::{cstr_bytes, word};
use super::dxt::{host_index, SegRec};
use super::header::{region, Map};
use super::inflate::{Budget, RegionReader};
use super::output::IoOps;
use super::{corrupt, Res};

const HDR: usize = 104;
const SEG: usize = 32;
/// Decompressed bytes inflated per step; what a stream holds besides its batch.
const CHUNK: usize = 4 << 20;

/// The step for a region of `input_len` compressed bytes: small regions get small buffers.
#[cfg(not(test))]
fn chunk_for(input_len: usize) -> usize {
    CHUNK.min(input_len.saturating_mul(4).max(64 << 10))
}

/// Unit tests step 13 bytes at a time, so headers and segments straddle every chunk boundary.
#[cfg(test)]
fn chunk_for(_input_len: usize) -> usize {
    13
}

fn module_name(src: u8) -> &'static str {
    if src == 0 {
        "DXT_POSIX"
    } else {
        "DXT_MPIIO"
    }
}

/// A scanned DXT module to stream: its source (0 = DXT_POSIX, 1 = DXT_MPIIO), version, region
/// (file offset and length) and decompressed length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DxtPart {
    pub src: u8,
    pub ver: u32,
    pub off: u64,
    pub len: u64,
    pub out_len: u64,
}

/// Walks one DXT region as `decode_dxt` would, without keeping it: inflates it a chunk at a
/// time (charged to `budget`), reads each record header, skips its segments. Returns the
/// decompressed length; pushes `decode_dxt`'s note; fails with `inflate_region`'s or
/// `decode_dxt`'s error (an inflate error wins over a negative count found before it, as the
/// whole-region decode inflates before it parses).
pub(super) fn scan_dxt(src: u8, comp: u8, swap: bool, input: &[u8], budget: &mut Budget, notes: &mut Vec<String>) -> Res<u64> {
    let name = module_name(src);
    let mut rd = RegionReader::new(comp, format!("{name} region"))?;
    let step = chunk_for(input.len());
    let mut chunk: Vec<u8> = Vec::with_capacity(step);
    let mut hdr: Vec<u8> = Vec::with_capacity(HDR); // the bytes read so far of the header at `next`
    let (mut total, mut next) = (0u64, 0u64);
    let mut bad = None;
    loop {
        chunk.clear();
        let n = rd.read(input, &mut chunk, step, budget)?;
        if n == 0 {
            break;
        }
        let base = total;
        total += n as u64;
        // every header that starts (or continues) in this chunk
        while bad.is_none() && next + (hdr.len() as u64) < total {
            let from = (next + hdr.len() as u64 - base) as usize;
            let take = (HDR - hdr.len()).min(n - from);
            hdr.extend_from_slice(&chunk[from..from + take]);
            if hdr.len() < HDR {
                break;
            }
            let (wc, rc) = (word(&hdr, 88, swap) as i64, word(&hdr, 96, swap) as i64);
            if wc < 0 || rc < 0 {
                bad = Some(format!("{name}: negative segment count"));
                break;
            }
            let nseg = (wc as u64).saturating_add(rc as u64);
            next = next.saturating_add(HDR as u64).saturating_add(nseg.saturating_mul(SEG as u64));
            hdr.clear();
        }
    }
    if let Some(msg) = bad {
        return corrupt(msg);
    }
    // the last header read has its segments past the end: decode_dxt's stop
    if next > total {
        notes.push(format!("{name}: record with segments past the region end; stopped"));
    }
    Ok(total)
}

/// The record being streamed: what its rows share, its segment count, the next segment.
struct Rec {
    seg: SegRec,
    nseg: u64,
    k: u64,
}

/// The rows of the scanned DXT modules, a batch at a time (see the module docs). Holds one
/// chunk of decompressed bytes and the host names; the log's bytes are passed to each call.
pub struct DxtStream {
    comp: u8,
    swap: bool,
    parts: Vec<DxtPart>,
    cur: usize,
    rd: Option<RegionReader>,
    /// decompressed bytes not yet parsed: `buf[head..]`
    buf: Vec<u8>,
    head: usize,
    /// bytes of the current region parsed, and inflated
    pos: u64,
    inflated: u64,
    rec: Option<Rec>,
    hosts: HashMap<Vec<u8>, u32>,
    hostnames: Vec<String>,
}

impl DxtStream {
    pub fn new(comp: u8, swap: bool, parts: Vec<DxtPart>) -> Self {
        DxtStream {
            comp,
            swap,
            parts,
            cur: 0,
            rd: None,
            buf: Vec::new(),
            head: 0,
            pos: 0,
            inflated: 0,
            rec: None,
            hosts: HashMap::new(),
            hostnames: Vec::new(),
        }
    }

    fn next_part(&mut self) {
        self.cur += 1;
        self.rd = None;
        self.buf = Vec::new();
        self.head = 0;
        self.pos = 0;
        self.inflated = 0;
        self.rec = None;
    }

    /// Makes at least `need` unparsed bytes available in `buf[head..]`.
    fn fill(&mut self, input: &[u8], need: usize, out_len: u64) -> Res<()> {
        let name = module_name(self.parts[self.cur].src);
        while self.buf.len() - self.head < need {
            self.buf.drain(..self.head);
            self.head = 0;
            let rd = self.rd.as_mut().expect("reader set up by next_batch");
            let n = rd.read(input, &mut self.buf, chunk_for(input.len()), &mut Budget { left: usize::MAX })?;
            self.inflated += n as u64;
            if n == 0 || self.inflated > out_len {
                return corrupt(format!("{name} region: changed since it was scanned"));
            }
        }
        Ok(())
    }

    /// The next batch of at most `max_rows` rows (at least 1), or None when every module is
    /// done. `data` is the whole log, the same bytes each call. `hostnames` of each batch is
    /// the list so far (its `host_idx` index into it).
    pub fn next_batch(&mut self, data: &[u8], max_rows: usize) -> Res<Option<IoOps>> {
        let max_rows = max_rows.max(1);
        let left: u64 = self.parts[self.cur.min(self.parts.len())..].iter().map(|p| p.out_len / SEG as u64).sum::<u64>();
        let cap = (max_rows as u64).min(left.saturating_sub(self.pos / SEG as u64)) as usize;
        let mut t = IoOps {
            source: Vec::with_capacity(cap),
            record_id: Vec::with_capacity(cap),
            rank: Vec::with_capacity(cap),
            seq: Vec::with_capacity(cap),
            op: Vec::with_capacity(cap),
            offset: Vec::with_capacity(cap),
            length: Vec::with_capacity(cap),
            start: Vec::with_capacity(cap),
            end: Vec::with_capacity(cap),
            host_idx: Vec::with_capacity(cap),
            hostnames: Vec::new(),
        };
        while t.source.len() < max_rows && self.cur < self.parts.len() {
            let p = self.parts[self.cur];
            let name = module_name(p.src);
            let input = region(data, Map { off: p.off, len: p.len }, name)?;
            if self.rd.is_none() {
                self.rd = Some(RegionReader::new(self.comp, format!("{name} region"))?);
                self.buf = Vec::with_capacity(chunk_for(input.len()) + HDR);
            }
            let swap = self.swap;
            match self.rec.as_mut() {
                None => {
                    if p.out_len - self.pos < HDR as u64 {
                        self.next_part();
                        continue;
                    }
                    self.fill(input, HDR, p.out_len)?;
                    let hdr = &self.buf[self.head..self.head + HDR];
                    let id = word(hdr, 0, swap) as i64;
                    let rank = word(hdr, 8, swap) as i64;
                    let host = cstr_bytes(&hdr[24..88]);
                    let (wc, rc) = (word(hdr, 88, swap) as i64, word(hdr, 96, swap) as i64);
                    if wc < 0 || rc < 0 {
                        return corrupt(format!("{name}: negative segment count"));
                    }
                    let nseg = (wc as u64).saturating_add(rc as u64);
                    // the scan noted it: "record with segments past the region end; stopped"
                    if nseg.saturating_mul(SEG as u64) > p.out_len - self.pos - HDR as u64 {
                        self.next_part();
                        continue;
                    }
                    let host = host_index(&mut self.hosts, &mut self.hostnames, host);
                    self.head += HDR;
                    self.pos += HDR as u64;
                    let seg = SegRec { src: p.src, ver: p.ver, swap, id, rank, wc: wc as u64, host };
                    self.rec = Some(Rec { seg, nseg, k: 0 });
                }
                Some(r) if r.k == r.nseg => self.rec = None,
                Some(_) => {
                    self.fill(input, SEG, p.out_len)?;
                    let r = self.rec.as_mut().expect("current record");
                    let avail = ((self.buf.len() - self.head) / SEG) as u64;
                    let n = (r.nseg - r.k).min((max_rows - t.source.len()) as u64).min(avail) as usize;
                    let segs = &self.buf[self.head..self.head + n * SEG];
                    for (j, sb) in segs.chunks_exact(SEG).enumerate() {
                        r.seg.push(&mut t, r.k + j as u64, sb);
                    }
                    r.k += n as u64;
                    self.head += n * SEG;
                    self.pos += (n * SEG) as u64;
                }
            }
        }
        if t.source.is_empty() {
            return Ok(None);
        }
        t.hostnames = self.hostnames.clone();
        Ok(Some(t))
    }
}

#[cfg(test)]
mod tests {
    use super::super::dxt::decode_dxt;
    use super::*;

    /// A DXT region of `recs` records (write count, read count, host), byte order `swap`.
    fn region_bytes(recs: &[(i64, i64, &str)], swap: bool) -> Vec<u8> {
        let w = |v: u64| if swap { v.swap_bytes().to_le_bytes() } else { v.to_le_bytes() };
        let mut out = Vec::new();
        for (i, (wc, rc, host)) in recs.iter().enumerate() {
            out.extend_from_slice(&w(1000 + i as u64));
            out.extend_from_slice(&w(i as u64 % 3));
            out.extend_from_slice(&w(u64::MAX));
            let mut h = [0u8; 64];
            h[..host.len()].copy_from_slice(host.as_bytes());
            out.extend_from_slice(&h);
            out.extend_from_slice(&w(*wc as u64));
            out.extend_from_slice(&w(*rc as u64));
            for k in 0..(wc + rc).max(0) as u64 {
                for v in [k * 4096, 4096, (k as f64 * 0.5).to_bits(), (k as f64 * 0.5 + 0.25).to_bits()] {
                    out.extend_from_slice(&w(v));
                }
            }
        }
        out
    }

    fn zlib(raw: &[u8]) -> Vec<u8> {
        use flate2::{write::ZlibEncoder, Compression};
        use std::io::Write;
        let mut e = ZlibEncoder::new(Vec::new(), Compression::fast());
        e.write_all(raw).unwrap();
        e.finish().unwrap()
    }

    /// Streams `raw` (compressed as `comp`) in batches of `n` and checks it equals decode_dxt.
    fn check(raw: &[u8], comp: u8, swap: bool, src: u8, ver: u32, n: usize) {
        let mut want = IoOps::default();
        let mut want_notes = Vec::new();
        let whole = decode_dxt(src, ver, swap, raw, &mut want, &mut want_notes);
        let data = if comp == 0 { zlib(raw) } else { raw.to_vec() };
        let mut notes = Vec::new();
        let scanned = scan_dxt(src, comp, swap, &data, &mut Budget { left: usize::MAX }, &mut notes);
        assert_eq!(whole.is_ok(), scanned.is_ok());
        if let Err(e) = whole {
            assert_eq!(e.msg, scanned.unwrap_err().msg);
            return;
        }
        assert_eq!(notes, want_notes);
        let part = DxtPart { src, ver, off: 0, len: data.len() as u64, out_len: scanned.unwrap() };
        let mut s = DxtStream::new(comp, swap, vec![part]);
        let mut got = IoOps::default();
        while let Some(b) = s.next_batch(&data, n).unwrap() {
            assert!(b.source.len() <= n.max(1));
            let names = b.hostnames.clone();
            got.source.extend(&b.source);
            got.record_id.extend(&b.record_id);
            got.rank.extend(&b.rank);
            got.seq.extend(&b.seq);
            got.op.extend(&b.op);
            got.offset.extend(&b.offset);
            got.length.extend(&b.length);
            got.start.extend(&b.start);
            got.end.extend(&b.end);
            got.host_idx.extend(&b.host_idx);
            got.hostnames = names;
        }
        assert_eq!(got.source, want.source);
        assert_eq!(got.record_id, want.record_id);
        assert_eq!((&got.rank, &got.seq, &got.op), (&want.rank, &want.seq, &want.op));
        assert_eq!((&got.offset, &got.length, &got.host_idx), (&want.offset, &want.length, &want.host_idx));
        assert_eq!(got.start.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want.start.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        assert_eq!(got.end.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want.end.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        assert_eq!(got.hostnames, want.hostnames);
    }

    #[test]
    fn streamed_equals_whole_region() {
        let recs = [(3, 2, "nid01"), (0, 0, "nid02"), (5, 0, "nid01"), (0, 4, "x")];
        for swap in [false, true] {
            let raw = region_bytes(&recs, swap);
            for comp in [0, 2] {
                for n in [1, 2, 7, 1000] {
                    for (src, ver) in [(0, 1), (1, 1), (1, 2)] {
                        check(&raw, comp, swap, src, ver, n);
                    }
                }
                // cut inside a record's segments, inside a header, and just after a header
                for cut in [raw.len() - 40, 104 + 5 * 32 + 50, 104 + 5 * 32 + 104] {
                    check(&raw[..cut], comp, swap, 0, 1, 3);
                }
                // a negative count is corrupt, as in decode_dxt
                check(&region_bytes(&[(1, 1, "a"), (-1, 2, "b")], swap), comp, swap, 0, 1, 3);
            }
        }
    }

    #[test]
    fn truncated_stream_is_corrupt_and_budget_is_a_limit() {
        let raw = region_bytes(&[(200, 100, "nid01")], false);
        let z = zlib(&raw);
        let mut notes = Vec::new();
        let e = scan_dxt(0, 0, false, &z[..z.len() / 2], &mut Budget { left: usize::MAX }, &mut notes).unwrap_err();
        assert!(e.msg.contains("truncated"), "{}", e.msg);
        let e = scan_dxt(0, 0, false, &z, &mut Budget { left: 1000 }, &mut notes).unwrap_err();
        assert_eq!(e.kind, super::super::ErrKind::Limit);
    }
}
