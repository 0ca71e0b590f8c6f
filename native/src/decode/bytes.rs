//! Small bounds-checked helpers: little-endian words, the writer's byte order, C strings,
//! sscanf-like integer parsing, and a cursor over a region.

#[inline]
pub(super) fn rd_u64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

#[inline]
pub(super) fn rd_u32(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}

#[inline]
pub(super) fn wr_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Reads a 64-bit word in the writer's byte order.
#[inline]
pub(super) fn word(b: &[u8], off: usize, swap: bool) -> u64 {
    let v = rd_u64(b, off);
    if swap {
        v.swap_bytes()
    } else {
        v
    }
}

/// The C-string prefix of `b` (up to the first NUL), as text.
pub(super) fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

pub(super) fn cstr_bytes(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}

/// sscanf("%d") on the start of `s`: optional whitespace, sign, digits.
pub(super) fn scan_int(s: &[u8]) -> Option<(i64, &[u8])> {
    let mut i = 0;
    while i < s.len() && (s[i] as char).is_ascii_whitespace() {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        neg = s[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut v: i64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.saturating_mul(10).saturating_add((s[i] - b'0') as i64);
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if neg { -v } else { v }, &s[i..]))
}

/// "%d.%d" of a version string.
pub(super) fn parse_version(v: &[u8]) -> Option<(i32, i32)> {
    let (maj, rest) = scan_int(v)?;
    let rest = rest.strip_prefix(b".")?;
    // sscanf's %d would skip whitespace here too
    let (min, _) = scan_int(rest)?;
    Some((maj.clamp(i32::MIN as i64, i32::MAX as i64) as i32, min.clamp(i32::MIN as i64, i32::MAX as i64) as i32))
}

pub(super) fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// Reads a region front to back; a read past its end is a short read, not a panic.
pub(super) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }
    /// The next `n` bytes, or None on a short read (end of region).
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return None;
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Some(s)
    }
    pub(super) fn left(&self) -> usize {
        self.buf.len() - self.pos
    }
}
