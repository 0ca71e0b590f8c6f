//! Decompression of the regions: zlib or bzip2 (concatenated streams) or none, every byte
//! charged to a budget before it is allocated.

use super::{corrupt, DecodeErr, ErrKind, Res};

pub(super) struct Budget {
    pub(super) left: usize,
}

impl Budget {
    pub(super) fn take(&mut self, n: usize) -> Res<()> {
        if n > self.left {
            return Err(DecodeErr {
                kind: ErrKind::Limit,
                msg: "decompressed size exceeds the decoder's limit (possible decompression bomb)".into(),
            });
        }
        self.left -= n;
        Ok(())
    }
}

/// Inflates one region: a sequence of concatenated zlib (or bzip2) streams, as darshan-util
/// writes them (it restarts the stream at every stream end). `max_out`: stop (without error)
/// once that many bytes are produced; `None` = the whole region.
pub(super) fn inflate_region(
    comp: u8,
    input: &[u8],
    max_out: Option<usize>,
    budget: &mut Budget,
    what: &str,
) -> Res<Vec<u8>> {
    let mut out = Vec::new();
    inflate_region_into(comp, input, max_out, budget, what, &mut out)?;
    Ok(out)
}

/// `inflate_region` into `out` (cleared first, its capacity reused: a decode inflates every
/// region of a log, and log after log, into one buffer instead of freshly allocated ones, whose
/// pages the kernel would fault in and zero each time; docs/decisions/0038).
pub(super) fn inflate_region_into(
    comp: u8,
    input: &[u8],
    max_out: Option<usize>,
    budget: &mut Budget,
    what: &str,
    out: &mut Vec<u8>,
) -> Res<()> {
    out.clear();
    if max_out.is_some() && out.capacity() > 0 {
        // a reused buffer's spare capacity could take more than `max_out` bytes in one step (and
        // charge them to the budget): a capped region gets a buffer sized as it grows
        *out = Vec::new();
    }
    match comp {
        2 => {
            let n = max_out.map_or(input.len(), |m| m.min(input.len()));
            budget.take(n)?;
            out.extend_from_slice(&input[..n]);
            Ok(())
        }
        0 => {
            #[cfg(feature = "libdeflate")]
            if max_out.is_none() && whole::inflate_zlib(input, budget, out) {
                return Ok(());
            }
            inflate_streams(&mut Zlib(flate2::Decompress::new(true)), "zlib", input, max_out, budget, what, out)
        }
        1 => inflate_streams(&mut Bz(bzip2::Decompress::new(false)), "bzip2", input, max_out, budget, what, out),
        other => corrupt(format!("invalid compression type {other}")),
    }
}

/// Whole zlib regions inflated by libdeflate (feature `libdeflate`, off by default:
/// docs/decisions/0048), which decompresses a stream held whole in memory faster than zlib-rs's
/// streaming inflate. It only ever succeeds or declines: anything it cannot finish (bad or truncated data, or
/// more output than the budget allows) is redone from the region's start by the streaming
/// inflater, so the bytes, the budget and every error are the streaming path's.
#[cfg(feature = "libdeflate")]
mod whole {
    use super::Budget;
    use libdeflate_sys as ld;
    use std::cell::RefCell;

    struct Decompressor(*mut ld::libdeflate_decompressor);

    impl Drop for Decompressor {
        fn drop(&mut self) {
            // SAFETY: allocated by libdeflate_alloc_decompressor, freed once, here
            unsafe { ld::libdeflate_free_decompressor(self.0) }
        }
    }

    thread_local! {
        // one decompressor per thread (about 10 KB of tables), made on first use
        static DEC: RefCell<Option<Decompressor>> = const { RefCell::new(None) };
    }

    /// Inflates the concatenated zlib streams of `input` into `out` (emptied by the caller),
    /// charging `budget` only on success; false (with `out` emptied and `budget` untouched)
    /// when the streaming inflater must do the region instead.
    pub(super) fn inflate_zlib(input: &[u8], budget: &mut Budget, out: &mut Vec<u8>) -> bool {
        let done = DEC.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                // SAFETY: no preconditions; null on allocation failure, checked below
                let p = unsafe { ld::libdeflate_alloc_decompressor() };
                if p.is_null() {
                    return false;
                }
                *slot = Some(Decompressor(p));
            }
            let dec = slot.as_ref().map_or(std::ptr::null_mut(), |d| d.0);
            streams(dec, input, budget.left, out)
        });
        if done {
            budget.left -= out.len();
        } else {
            out.clear();
        }
        done
    }

    /// Every stream of `input`, one after the other, appended to `out`: at most `left` bytes
    /// in all. The room offered a stream starts at the spare capacity (or four times its
    /// compressed bytes) and doubles while libdeflate reports too little of it.
    fn streams(dec: *mut ld::libdeflate_decompressor, input: &[u8], left: usize, out: &mut Vec<u8>) -> bool {
        let mut pos = 0usize;
        while pos < input.len() {
            let rest = &input[pos..];
            let mut room = (out.capacity() - out.len()).max(rest.len().saturating_mul(4)).max(4096);
            loop {
                let room_now = room.min(left - out.len());
                if room_now == 0 {
                    return false;
                }
                out.reserve(room_now);
                let (mut used, mut made) = (0usize, 0usize);
                // SAFETY: `rest` is valid for its length; the output pointer is `out`'s spare
                // capacity, at least `room_now` bytes after `reserve`; libdeflate writes no more
                // than `room_now` bytes there and reports how many it wrote and read
                let r = unsafe {
                    ld::libdeflate_zlib_decompress_ex(
                        dec,
                        rest.as_ptr().cast(),
                        rest.len(),
                        out.as_mut_ptr().add(out.len()).cast(),
                        room_now,
                        &mut used,
                        &mut made,
                    )
                };
                if r == ld::libdeflate_result_LIBDEFLATE_SUCCESS && used > 0 && made <= room_now {
                    // SAFETY: libdeflate initialised `made` bytes of the spare capacity
                    unsafe { out.set_len(out.len() + made) };
                    pos += used;
                    break;
                }
                if r != ld::libdeflate_result_LIBDEFLATE_INSUFFICIENT_SPACE || room_now < room {
                    return false;
                }
                room = room.saturating_mul(2);
            }
        }
        true
    }
}

const CHUNK: usize = 256 * 1024;

/// One step of a streaming decompressor: (input used, output produced, stream ended).
trait Inflater: Send {
    fn step(&mut self, input: &[u8], out: &mut [u8]) -> Result<(usize, usize, bool), String>;
    /// `step` into the spare capacity of `out` (appended, never zeroed first).
    fn step_vec(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(usize, usize, bool), String>;
    fn restart(&mut self);
}

struct Zlib(flate2::Decompress);
impl Inflater for Zlib {
    fn step(&mut self, input: &[u8], out: &mut [u8]) -> Result<(usize, usize, bool), String> {
        let (i0, o0) = (self.0.total_in(), self.0.total_out());
        let st = self.0.decompress(input, out, flate2::FlushDecompress::None).map_err(|e| e.to_string())?;
        Ok(((self.0.total_in() - i0) as usize, (self.0.total_out() - o0) as usize, st == flate2::Status::StreamEnd))
    }
    fn step_vec(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(usize, usize, bool), String> {
        let (i0, o0) = (self.0.total_in(), self.0.total_out());
        let st = self.0.decompress_vec(input, out, flate2::FlushDecompress::None).map_err(|e| e.to_string())?;
        Ok(((self.0.total_in() - i0) as usize, (self.0.total_out() - o0) as usize, st == flate2::Status::StreamEnd))
    }
    fn restart(&mut self) {
        self.0.reset(true);
    }
}

struct Bz(bzip2::Decompress);
impl Inflater for Bz {
    fn step(&mut self, input: &[u8], out: &mut [u8]) -> Result<(usize, usize, bool), String> {
        let (i0, o0) = (self.0.total_in(), self.0.total_out());
        let st = self.0.decompress(input, out).map_err(|e| e.to_string())?;
        Ok(((self.0.total_in() - i0) as usize, (self.0.total_out() - o0) as usize, st == bzip2::Status::StreamEnd))
    }
    fn step_vec(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<(usize, usize, bool), String> {
        let (i0, o0) = (self.0.total_in(), self.0.total_out());
        let st = self.0.decompress_vec(input, out).map_err(|e| e.to_string())?;
        Ok(((self.0.total_in() - i0) as usize, (self.0.total_out() - o0) as usize, st == bzip2::Status::StreamEnd))
    }
    fn restart(&mut self) {
        self.0 = bzip2::Decompress::new(false);
    }
}

/// Decompresses concatenated streams into `out` (empty, maybe with capacity) until the input
/// is used up (or `max_out` bytes are produced). The output grows in chunks written in place
/// (never zeroed first), each charged to the budget before it is allocated, so a bomb stops at
/// the budget; with `max_out`, at most that many bytes are written.
fn inflate_streams(
    z: &mut dyn Inflater,
    kind: &str,
    input: &[u8],
    max_out: Option<usize>,
    budget: &mut Budget,
    what: &str,
    out: &mut Vec<u8>,
) -> Res<()> {
    let mut pos = 0usize;
    let mut in_stream = false;
    let first = (input.len().saturating_mul(4)).clamp(4096, 16 << 20);
    loop {
        if let Some(m) = max_out {
            if out.len() >= m {
                out.truncate(m);
                return Ok(());
            }
        }
        if pos >= input.len() && !in_stream {
            return Ok(());
        }
        if out.len() == out.capacity() {
            let grow = if out.capacity() == 0 { first } else { CHUNK.max(out.capacity() / 2) };
            let grow = match max_out {
                Some(m) => grow.min(m - out.len()),
                None => grow,
            };
            let grow = grow.min(budget.left.max(1));
            out.reserve_exact(grow);
        }
        let (used, produced, ended) = z
            .step_vec(&input[pos..], out)
        .map_err(|e| DecodeErr { kind: ErrKind::Corrupt, msg: format!("{what}: {kind} error: {e}") })?;
        budget.take(produced)?;
        pos += used;
        in_stream = true;
        if ended {
            z.restart();
            in_stream = false;
        } else if used == 0 && produced == 0 {
            if pos >= input.len() {
                return corrupt(format!("{what}: compressed data ends inside a {kind} stream (truncated)"));
            }
            return corrupt(format!("{what}: {kind} stream makes no progress"));
        }
    }
}

/// The decompressed bytes of one region, a piece at a time, for regions too large to hold
/// (the streamed DXT regions): the same streams, errors and messages as `inflate_region`.
pub(super) struct RegionReader {
    z: Option<Box<dyn Inflater>>,
    kind: &'static str,
    what: String,
    pos: usize,
    in_stream: bool,
}

impl RegionReader {
    pub(super) fn new(comp: u8, what: String) -> Res<Self> {
        let (z, kind): (Option<Box<dyn Inflater>>, &'static str) = match comp {
            0 => (Some(Box::new(Zlib(flate2::Decompress::new(true)))), "zlib"),
            1 => (Some(Box::new(Bz(bzip2::Decompress::new(false)))), "bzip2"),
            2 => (None, "none"),
            other => return corrupt(format!("invalid compression type {other}")),
        };
        Ok(RegionReader { z, kind, what, pos: 0, in_stream: false })
    }

    /// Appends between 1 and `want` (> 0) decompressed bytes of `input` (the whole compressed
    /// region) to `out`, charging them to `budget`; Ok(0) only once the region is used up.
    pub(super) fn read(&mut self, input: &[u8], out: &mut Vec<u8>, want: usize, budget: &mut Budget) -> Res<usize> {
        let Some(z) = self.z.as_mut() else {
            let n = want.min(input.len() - self.pos);
            budget.take(n)?;
            out.extend_from_slice(&input[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        };
        let start = out.len();
        out.resize(start + want, 0);
        loop {
            if self.pos >= input.len() && !self.in_stream {
                out.truncate(start);
                return Ok(0);
            }
            let (what, kind) = (&self.what, self.kind);
            let (used, produced, ended) = z
                .step(&input[self.pos..], &mut out[start..])
                .map_err(|e| DecodeErr { kind: ErrKind::Corrupt, msg: format!("{what}: {kind} error: {e}") })?;
            budget.take(produced)?;
            self.pos += used;
            self.in_stream = true;
            if ended {
                z.restart();
                self.in_stream = false;
            } else if used == 0 && produced == 0 {
                if self.pos >= input.len() {
                    return corrupt(format!("{what}: compressed data ends inside a {kind} stream (truncated)"));
                }
                return corrupt(format!("{what}: {kind} stream makes no progress"));
            }
            if produced > 0 {
                out.truncate(start + produced);
                return Ok(produced);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zlib(raw: &[u8]) -> Vec<u8> {
        use flate2::{write::ZlibEncoder, Compression};
        use std::io::Write;
        let mut e = ZlibEncoder::new(Vec::new(), Compression::fast());
        e.write_all(raw).unwrap();
        e.finish().unwrap()
    }

    /// A reused buffer (emptied, with spare capacity) gives what a fresh one gives: the bytes,
    /// the `max_out` cut, the budget charged, and the errors.
    #[test]
    fn reused_buffer_equals_fresh() {
        let raw: Vec<u8> = (0..300_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let mut two = zlib(&raw[..500_000]);
        two.extend(zlib(&raw[500_000..]));
        let mut buf = Vec::with_capacity(8 << 20);
        buf.extend_from_slice(b"left over from an earlier region");
        for comp in [0u8, 2] {
            let input = if comp == 0 { two.clone() } else { raw.clone() };
            for max_out in [None, Some(4096), Some(700_000)] {
                for left in [usize::MAX, 1 << 20, 100] {
                    let mut b1 = Budget { left };
                    let fresh = inflate_region(comp, &input, max_out, &mut b1, "r");
                    let mut b2 = Budget { left };
                    let reused = inflate_region_into(comp, &input, max_out, &mut b2, "r", &mut buf);
                    match fresh {
                        Ok(v) => {
                            reused.unwrap();
                            assert_eq!(v, buf);
                            assert_eq!(b1.left, b2.left);
                        }
                        Err(e) => {
                            let r = reused.unwrap_err();
                            assert_eq!((e.kind, e.msg), (r.kind, r.msg));
                        }
                    }
                }
            }
            // a truncated stream is corrupt either way
            if comp == 0 {
                let cut = &two[..two.len() / 3];
                let e1 = inflate_region(0, cut, None, &mut Budget { left: usize::MAX }, "r").unwrap_err();
                let e2 = inflate_region_into(0, cut, None, &mut Budget { left: usize::MAX }, "r", &mut buf).unwrap_err();
                assert_eq!((e1.kind, e1.msg), (e2.kind, e2.msg));
            }
        }
    }

    /// The libdeflate path gives exactly what the streaming inflater gives: bytes, budget left,
    /// and the kind and message of every error (bad, truncated, trailing bytes, over budget).
    #[cfg(feature = "libdeflate")]
    #[test]
    fn whole_region_equals_streaming() {
        let raw: Vec<u8> = (0..400_000u32).flat_map(|i| (i % 977).to_le_bytes()).collect();
        let mut three = zlib(&raw[..10]);
        three.extend(zlib(&raw[10..900_000]));
        three.extend(zlib(&raw[900_000..]));
        let mut flipped = three.clone();
        flipped[three.len() / 2] ^= 0x40;
        let mut trailing = three.clone();
        trailing.extend_from_slice(b"\x78\x9c\x00");
        let empty: Vec<u8> = Vec::new();
        let inputs = [three.clone(), three[..three.len() - 3].to_vec(), flipped, trailing, zlib(&[]), empty];
        let mut buf = Vec::with_capacity(1 << 10);
        for input in &inputs {
            for left in [usize::MAX, raw.len(), raw.len() - 1, 5] {
                let mut b1 = Budget { left };
                let mut streamed = Vec::new();
                let s = inflate_streams(
                    &mut Zlib(flate2::Decompress::new(true)), "zlib", input, None, &mut b1, "r", &mut streamed,
                );
                let mut b2 = Budget { left };
                let w = inflate_region_into(0, input, None, &mut b2, "r", &mut buf);
                match s {
                    Ok(()) => {
                        w.unwrap();
                        assert_eq!(streamed, buf);
                        assert_eq!(b1.left, b2.left);
                    }
                    Err(e) => {
                        let r = w.unwrap_err();
                        assert_eq!((e.kind, e.msg), (r.kind, r.msg));
                    }
                }
            }
        }
    }
}
