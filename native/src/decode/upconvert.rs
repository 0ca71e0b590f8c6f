//! darshan-util 3.5.0's up-conversions of older counter-record versions, byte for byte.
//!
//! darshan-util (`*-logutils.c`) up-converts an old record in a 1024-byte scratch buffer with a
//! cascade of blocks, one per version step, e.g. for POSIX:
//!
//! ```text
//! if (ver == 1)  { read a v1 record (680 bytes); up-convert 1 -> 2 in place }
//! if (ver <= 2)  { if (ver == 2) read a v2 record (648 bytes); up-convert 2 -> 3 in place }
//! if (ver <= 3)  { if (ver == 3) read a v3 record (664 bytes); up-convert 3 -> 4 in place }
//! ```
//!
//! where an up-conversion memmoves counters to their new place and fills the counters the old
//! version lacks (-1, -1.0 or 0). Each block is a `Stage` below, each memmove or fill a `Step`:
//! a record of version `ver` is read by the first stage with `ver <= upto` and goes through
//! that stage and every later one. Offsets are bytes from the record start (`w(k)`: word `k`
//! after the base record).

use super::bytes::{rd_u64, wr_u64, Cursor};
use super::modules::{CounterShape, MODULE_NAMES, M_H5D, M_H5F, M_MPIIO, M_PNC_FILE, M_POSIX, M_STDIO};
use super::{corrupt, Res};

const B: usize = 16; // sizeof(struct darshan_base_record)
const SCRATCH: usize = 1024;
const NEG1_F64: u64 = 0xBFF0_0000_0000_0000; // (-1.0f64).to_bits()
const NEG1_I64: u64 = u64::MAX;

/// Byte offset of the `k`-th 8-byte word after the base record.
const fn w(k: usize) -> usize {
    B + 8 * k
}

/// One memmove or fill of an up-conversion, in darshan-util's order.
#[derive(Clone, Copy)]
enum Step {
    /// memmove(to, from, len)
    Move { to: usize, from: usize, len: usize },
    /// memmove(to, from, rec_len - from): up to the end of the record *as read* (darshan-util's
    /// `rec_len`), not as grown by the stages before. Bytes past that are left behind, and the
    /// zeroed scratch shows through: this is how POSIX v3 loses F_VARIANCE_RANK_*.
    MoveRest { to: usize, from: usize },
    /// `n` int64 counters the old version lacks: -1
    Ints(usize, usize),
    /// `n` double counters the old version lacks: -1.0
    Flts(usize, usize),
    /// an int64 counter the old version lacks: 0
    Zero(usize),
    /// word `to` += word `from`, on the values as stored (darshan-util adds before it
    /// byte-swaps, so on a byte-swapped log the sum is of the unswapped words)
    Add { to: usize, from: usize },
}

impl Step {
    fn apply(self, s: &mut [u8; SCRATCH], rec_len: usize) {
        match self {
            Step::Move { to, from, len } => s.copy_within(from..from + len, to),
            Step::MoveRest { to, from } => s.copy_within(from..rec_len, to),
            Step::Ints(at, n) => (0..n).for_each(|i| wr_u64(s, at + 8 * i, NEG1_I64)),
            Step::Flts(at, n) => (0..n).for_each(|i| wr_u64(s, at + 8 * i, NEG1_F64)),
            Step::Zero(at) => wr_u64(s, at, 0),
            Step::Add { to, from } => {
                let a = rd_u64(s, from) as i64;
                let b = rd_u64(s, to) as i64;
                wr_u64(s, to, b.wrapping_add(a) as u64);
            }
        }
    }
}

/// Counters of the current layout that darshan-util does not byte-swap after an
/// up-conversion (mostly the ones it set itself); bit `i` = counter `i`.
#[derive(Clone, Copy, Default)]
pub(super) struct NoSwap {
    /// the extra word before the counters (H5D's file_rec_id)
    pub(super) pre: bool,
    ints: u128,
    flts: u128,
}

impl NoSwap {
    const NONE: NoSwap = NoSwap { pre: false, ints: 0, flts: 0 };

    pub(super) fn int(&self, i: usize) -> bool {
        i < 128 && (self.ints >> i) & 1 == 1
    }

    pub(super) fn flt(&self, i: usize) -> bool {
        i < 128 && (self.flts >> i) & 1 == 1
    }

    fn or(self, o: NoSwap) -> NoSwap {
        NoSwap { pre: self.pre || o.pre, ints: self.ints | o.ints, flts: self.flts | o.flts }
    }
}

const fn bits(idx: &[usize]) -> u128 {
    let mut m = 0u128;
    let mut k = 0;
    while k < idx.len() {
        m |= 1 << idx[k];
        k += 1;
    }
    m
}

const fn ints(idx: &[usize]) -> NoSwap {
    NoSwap { pre: false, ints: bits(idx), flts: 0 }
}

const fn flts(idx: &[usize]) -> NoSwap {
    NoSwap { pre: false, ints: 0, flts: bits(idx) }
}

/// One block of darshan-util's cascade: records of version `<= upto` pass through it.
struct Stage {
    upto: u32,
    /// size of a record of version `upto` as stored (read when this stage is the first)
    len: usize,
    /// records whose int64 at this offset is > 0 are skipped (read past) when this stage reads
    skip_if_positive: Option<usize>,
    steps: &'static [Step],
    no_swap: NoSwap,
}

const STAGE: Stage = Stage { upto: 0, len: 0, skip_if_positive: None, steps: &[], no_swap: NoSwap::NONE };

use Step::{Add, Flts, Ints, Move, MoveRest, Zero};

const POSIX: &[Stage] = &[
    // 1 -> 2: the four STDIO counters of version 1 (words 6..9) go; records with STDIO
    // counters mixed in (POSIX_FOPENS, word 6, > 0) cannot be up-converted: skipped
    Stage { upto: 1, len: 680, skip_if_positive: Some(w(6)), steps: &[MoveRest { to: w(6), from: w(6 + 4) }], ..STAGE },
    // 2 -> 3: new F_CLOSE_START_TIMESTAMP, F_OPEN_END_TIMESTAMP (floats 3, 4 after 64 ints)
    Stage {
        upto: 2,
        len: 648,
        steps: &[Move { to: w(64 + 5), from: w(64 + 3), len: 12 * 8 }, Flts(w(64 + 3), 2)],
        no_swap: flts(&[3, 4]),
        ..STAGE
    },
    // 3 -> 4: new FILENOS, DUPS (-1), RENAME_SOURCES, RENAME_TARGETS (-1), RENAMED_FROM (0).
    // darshan-util skips byte-swapping the values it set itself; for versions < 4 it tests the
    // *integer* RENAME indices (10, 11, 12) inside the float loop, so those float counters stay
    // unswapped -- reproduced here.
    Stage {
        upto: 3,
        len: 664,
        steps: &[
            MoveRest { to: w(3), from: w(1) },
            Ints(w(1), 2),
            MoveRest { to: w(13), from: w(10) },
            Ints(w(10), 2),
            Zero(w(12)),
        ],
        no_swap: flts(&[10, 11, 12]),
        ..STAGE
    },
];

const MPIIO: &[Stage] = &[
    // 1 and 2 -> 3 (versions 1 and 2 share a layout): new F_CLOSE_START_TIMESTAMP,
    // F_OPEN_END_TIMESTAMP (floats 3, 4 after 51 ints)
    Stage {
        upto: 2,
        len: 544,
        steps: &[Move { to: w(51 + 5), from: w(51 + 3), len: 12 * 8 }, Flts(w(51 + 3), 2)],
        no_swap: flts(&[3, 4]),
        ..STAGE
    },
];

const STDIO: &[Stage] = &[
    // 1 -> 2: new STDIO_FDOPENS
    Stage { upto: 1, len: 240, steps: &[MoveRest { to: w(2), from: w(1) }, Ints(w(1), 1)], no_swap: ints(&[1]), ..STAGE },
];

const H5F: &[Stage] = &[
    // 1 -> 2: the close timestamp becomes F_CLOSE_END; new F_CLOSE_START, F_OPEN_END
    Stage {
        upto: 1,
        len: 40,
        steps: &[Move { to: w(4), from: w(2), len: 8 }, Flts(w(2), 2)],
        no_swap: flts(&[1, 2]),
        ..STAGE
    },
    // 2 -> 3: new H5F_FLUSHES, H5F_USE_MPIIO and F_META_TIME
    Stage {
        upto: 2,
        len: 56,
        steps: &[Move { to: w(3), from: w(1), len: 4 * 8 }, Ints(w(1), 2), Flts(w(3 + 4), 1)],
        no_swap: NoSwap { pre: false, ints: bits(&[1, 2]), flts: bits(&[4]) },
        ..STAGE
    },
];

const H5D: &[Stage] = &[
    // 1 -> 2: version 1 has no file_rec_id (0 here)
    Stage {
        upto: 1,
        len: 904,
        steps: &[MoveRest { to: B + 8, from: B }, Zero(B)],
        no_swap: NoSwap { pre: true, ints: 0, flts: 0 },
        ..STAGE
    },
];

const PNETCDF_FILE: &[Stage] = &[
    // 1 -> 2: the close timestamp becomes F_CLOSE_END; new F_CLOSE_START, F_OPEN_END
    Stage {
        upto: 1,
        len: 48,
        steps: &[Move { to: w(2 + 3), from: w(2 + 1), len: 8 }, Flts(w(2 + 1), 2)],
        no_swap: flts(&[1, 3]),
        ..STAGE
    },
    // 2 -> 3: FILE_OPENS = INDEP_OPENS + COLL_OPENS; the timestamps move to their place after
    // 9 ints; new CREATES, REDEFS ... WAIT_FAILURES (-1) and WAIT_START, WAIT_END, META_TIME,
    // WAIT_TIME (-1.0)
    Stage {
        upto: 2,
        len: 64,
        steps: &[
            Add { to: w(1), from: w(0) },
            Move { to: w(9), from: w(2), len: 16 },
            Move { to: w(9 + 3), from: w(2 + 2), len: 16 },
            Ints(w(0), 1),
            Ints(w(2), 7),
            Flts(w(9 + 2), 1),
            Flts(w(9 + 5), 3),
        ],
        no_swap: NoSwap { pre: false, ints: bits(&[0, 2, 3, 4, 5, 6, 7, 8]), flts: bits(&[2, 5, 6, 7]) },
        ..STAGE
    },
];

/// The up-conversion cascade of a module (empty: no older version is known).
fn stages(module: usize) -> &'static [Stage] {
    match module {
        M_POSIX => POSIX,
        M_MPIIO => MPIIO,
        M_STDIO => STDIO,
        M_H5F => H5F,
        M_H5D => H5D,
        M_PNC_FILE => PNETCDF_FILE,
        _ => &[],
    }
}

/// Reads one record of version `ver` (older than the current one) and appends it to `rec` in
/// the current layout, still in the writer's byte order. Ok(None) at the end of the region
/// (short read); otherwise the counters the caller must not byte-swap.
pub(super) fn read_old_record(
    shape: &CounterShape,
    ver: u32,
    cur: &mut Cursor,
    rec: &mut Vec<u8>,
) -> Res<Option<NoSwap>> {
    let stages = stages(shape.module);
    let Some(first) = stages.iter().position(|st| ver <= st.upto) else {
        return corrupt(format!("{} module version {ver} has no known layout", MODULE_NAMES[shape.module]));
    };
    let mut s = [0u8; SCRATCH];
    let rec_len = stages[first].len;
    loop {
        match cur.take(rec_len) {
            Some(b) => s[..rec_len].copy_from_slice(b),
            None => return Ok(None),
        }
        match stages[first].skip_if_positive {
            Some(off) if (rd_u64(&s, off) as i64) > 0 => continue,
            _ => break,
        }
    }
    let mut no_swap = NoSwap::NONE;
    for st in &stages[first..] {
        for step in st.steps {
            step.apply(&mut s, rec_len);
        }
        no_swap = no_swap.or(st.no_swap);
    }
    rec.extend_from_slice(&s[..shape.size()]);
    Ok(Some(no_swap))
}
