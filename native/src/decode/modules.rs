//! The module table: header index, name and current version of every module darshan-util 3.5.0
//! knows, and the record shape of the counter modules.

pub const N_KNOWN_MODULES: usize = 18;
pub const MODULE_NAMES: [&str; N_KNOWN_MODULES] = [
    "NULL", "POSIX", "MPI-IO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "BG/Q", "LUSTRE",
    "STDIO", "DXT_POSIX", "DXT_MPIIO", "MDHIM", "APXC", "APMPI", "HEATMAP", "DFS", "DAOS",
];
pub(super) const M_POSIX: usize = 1;
pub(super) const M_MPIIO: usize = 2;
pub(super) const M_H5F: usize = 3;
pub(super) const M_H5D: usize = 4;
pub(super) const M_PNC_FILE: usize = 5;
pub(super) const M_PNC_VAR: usize = 6;
pub(super) const M_LUSTRE: usize = 8;
pub(super) const M_STDIO: usize = 9;
pub(super) const M_DXT_POSIX: usize = 10;
pub(super) const M_DXT_MPIIO: usize = 11;
pub(super) const M_APXC: usize = 13;
pub(super) const M_APMPI: usize = 14;
pub(super) const M_HEATMAP: usize = 15;
pub(super) const M_DFS: usize = 16;
pub(super) const M_DAOS: usize = 17;

/// Shape of a counter module's current (darshan-util 3.5.0) record:
/// base record (id, rank), `pre` extra 8-byte words (file_rec_id), `nints` int64 counters,
/// `nflts` double counters, `tail` trailing bytes (uuids).
#[derive(Debug, Clone, Copy)]
pub struct CounterShape {
    pub module: usize,
    pub cur_ver: u32,
    pub pre: usize,
    pub nints: usize,
    pub nflts: usize,
    pub tail: usize,
}

impl CounterShape {
    pub fn size(&self) -> usize {
        16 + 8 * (self.pre + self.nints + self.nflts) + self.tail
    }
}

pub fn counter_shape(module: usize) -> Option<CounterShape> {
    let s = |cur_ver, pre, nints, nflts, tail| CounterShape { module, cur_ver, pre, nints, nflts, tail };
    Some(match module {
        M_POSIX => s(4, 0, 69, 17, 0),
        M_MPIIO => s(3, 0, 51, 17, 0),
        M_H5F => s(3, 0, 3, 5, 0),
        M_H5D => s(2, 1, 94, 17, 0),
        M_PNC_FILE => s(3, 0, 9, 8, 0),
        M_PNC_VAR => s(1, 1, 120, 17, 0),
        M_STDIO => s(2, 0, 14, 15, 0),
        M_DFS => s(1, 0, 52, 15, 32),
        M_DAOS => s(1, 0, 64, 15, 48), // uuids + oid_hi/oid_lo
        _ => return None,
    })
}

/// Current (darshan-util 3.5.0) version of each module, by index (APXC, APMPI: AutoPerf's).
pub(super) const CUR_VERSIONS: [u32; N_KNOWN_MODULES] = [1, 4, 3, 3, 2, 3, 1, 2, 2, 2, 1, 2, 1, 1, 1, 1, 1, 1];
