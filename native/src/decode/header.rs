//! The uncompressed header: version, magic (byte order), compression type, partial-module
//! flags, the region map and module versions (with the module index shifts of 3.20 and 3.41).

use super::bytes::{cstr_bytes, parse_version, rd_u32, rd_u64, word};
use super::modules::{M_H5D, M_PNC_VAR};
use super::{corrupt, DecodeErr, ErrKind, Res};

pub const MAGIC: i64 = 6567223;

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Map {
    pub(super) off: u64,
    pub(super) len: u64,
}

pub(super) struct Header {
    pub(super) version: String,
    pub(super) major: i32,
    pub(super) minor: i32,
    pub(super) magic: i64,
    pub(super) comp_type: u8,
    pub(super) swapped: bool,
    pub(super) partial_flag: u64,
    pub(super) name_map: Map,
    pub(super) mod_map: [Map; 64],
    pub(super) mod_ver: [u32; 64],
    pub(super) job_map: Map,
}

pub(super) fn read_header(data: &[u8]) -> Res<Header> {
    if data.len() >= 2 && data[0] == 0x1f && data[1] == 0x8b {
        return Err(DecodeErr {
            kind: ErrKind::Unsupported,
            msg: "unsupported format 2.x (gzip-compressed Darshan 1.x/2.x log)".into(),
        });
    }
    if data.len() < 8 {
        return corrupt(format!("truncated header: {} bytes", data.len()));
    }
    let vbytes = cstr_bytes(&data[..8]);
    let version = String::from_utf8_lossy(vbytes).into_owned();
    let (major, minor) = match parse_version(vbytes) {
        Some(v) => v,
        None => {
            // Darshan 1.x/2.x uncompressed logs start with a binary job struct
            return corrupt("unable to parse log file format version".to_string());
        }
    };
    if major != 3 || !matches!(minor, 0 | 10 | 20 | 21 | 41) {
        let msg = if major == 1 || major == 2 {
            format!("unsupported format {major}.x")
        } else {
            format!("unsupported format {version}")
        };
        return Err(DecodeErr { kind: ErrKind::Unsupported, msg });
    }
    let new_layout = minor >= 41;
    let hdr_size = if new_layout { 8 + 8 + 8 + 8 + 16 + 64 * 16 + 64 * 4 } else { 8 + 8 + 4 + 4 + 16 + 16 * 16 + 16 * 4 };
    if data.len() < hdr_size {
        return corrupt(format!("truncated header: {} bytes, need {}", data.len(), hdr_size));
    }
    let raw_magic = rd_u64(data, 8);
    let swapped;
    if raw_magic as i64 == MAGIC {
        swapped = false;
    } else if raw_magic.swap_bytes() as i64 == MAGIC {
        swapped = true;
    } else {
        return corrupt(format!("bad magic number {:#x}", raw_magic));
    }
    let comp_type = data[16];
    // NOTE: darshan-util never byte-swaps the partial flag.
    let (mut partial_flag, maps_off, nmods) =
        if new_layout { (rd_u64(data, 24), 32usize, 64usize) } else { (rd_u32(data, 20) as u64, 24usize, 16usize) };
    let name_map = Map { off: word(data, maps_off, swapped), len: word(data, maps_off + 8, swapped) };
    let mut mod_map = [Map::default(); 64];
    let mut mod_ver = [0u32; 64];
    let vers_off = maps_off + 16 + nmods * 16;
    for i in 0..nmods {
        let o = maps_off + 16 + i * 16;
        mod_map[i] = Map { off: word(data, o, swapped), len: word(data, o + 8, swapped) };
        let v = rd_u32(data, vers_off + 4 * i);
        mod_ver[i] = if swapped { v.swap_bytes() } else { v };
    }
    // module index shifts: H5D was added in 3.20, PNETCDF_VAR in 3.41
    let shift_at = |idx: usize, mod_map: &mut [Map; 64], mod_ver: &mut [u32; 64], pf: &mut u64| {
        for i in (idx + 1..64).rev() {
            mod_map[i] = mod_map[i - 1];
            mod_ver[i] = mod_ver[i - 1];
        }
        mod_map[idx] = Map::default();
        mod_ver[idx] = 0;
        let shifted = (*pf << 1) >> (idx + 1) << (idx + 1);
        *pf = (*pf & ((1u64 << idx) - 1)) | shifted;
    };
    if minor < 20 {
        shift_at(M_H5D, &mut mod_map, &mut mod_ver, &mut partial_flag);
    }
    if minor < 41 {
        shift_at(M_PNC_VAR, &mut mod_map, &mut mod_ver, &mut partial_flag);
    }
    let job_off = hdr_size as u64;
    let job_len = if name_map.off == 0 {
        let mut l = 0u64;
        for m in mod_map.iter() {
            if m.off != 0 {
                l = m.off.wrapping_sub(job_off);
                break;
            }
        }
        if l == 0 {
            l = (data.len() as u64).wrapping_sub(job_off);
        }
        l
    } else {
        name_map.off.wrapping_sub(job_off)
    };
    Ok(Header {
        version,
        major,
        minor,
        magic: if swapped { raw_magic.swap_bytes() as i64 } else { raw_magic as i64 },
        comp_type,
        swapped,
        partial_flag,
        name_map,
        mod_map,
        mod_ver,
        job_map: Map { off: job_off, len: job_len },
    })
}

pub(super) fn region<'a>(data: &'a [u8], m: Map, what: &str) -> Res<&'a [u8]> {
    let end = m.off.checked_add(m.len);
    match end {
        Some(e) if e <= data.len() as u64 => Ok(&data[m.off as usize..e as usize]),
        _ => corrupt(format!(
            "{what} region [{}, +{}) lies outside the file ({} bytes; truncated?)",
            m.off,
            m.len,
            data.len()
        )),
    }
}
