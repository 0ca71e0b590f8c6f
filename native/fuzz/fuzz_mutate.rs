//! Random-mutation fuzzer for the Darshan decoder (no cargo-fuzz needed).
//!
//!   cargo run --release --no-default-features --example fuzz_mutate -- <corpus dir> [seconds] [seed]
//!
//! Seeds are the real logs under <corpus dir> (recursively, *.darshan). Each iteration picks
//! a seed and one of:
//!   * raw mutations of the file (bit flips, interesting 8-byte values, truncation, splices);
//!   * structure-aware mutations: inflate one region, mutate the *decompressed* records
//!     (counts, lengths, versions, strings), deflate it again and rewrite the region map, so
//!     the mutation reaches the record parsers instead of dying in a zlib checksum;
//!   * header mutations (module versions, region offsets/lengths, compression type).
//! Every input must return Ok or Err: a panic, or a decode slower than 2 s, is a finding and
//! the input is written to fuzz/findings/. Allocation is bounded by the decoder's Limits.

use iolake_native::decode::{decode, Limits};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const INTERESTING: [u64; 12] = [
    0,
    1,
    u64::MAX,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    4096,
    1 << 40,
    2,
    0xBFF0_0000_0000_0000,
];

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                collect(&p, out);
            } else if p.extension().map_or(false, |x| x == "darshan") {
                out.push(p);
            }
        }
    }
}

fn mutate_bytes(b: &mut Vec<u8>, rng: &mut Rng) {
    if b.is_empty() {
        return;
    }
    for _ in 0..1 + rng.below(6) {
        match rng.below(6) {
            0 | 1 => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            2 => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            3 => {
                if b.len() >= 8 {
                    let i = rng.below(b.len() / 8) * 8;
                    let v = INTERESTING[rng.below(INTERESTING.len())];
                    b[i..i + 8].copy_from_slice(&v.to_le_bytes());
                }
            }
            4 => {
                let n = rng.below(b.len() + 1);
                b.truncate(n);
                if b.is_empty() {
                    return;
                }
            }
            _ => {
                // duplicate a chunk (record repetition)
                let s = rng.below(b.len());
                let l = rng.below((b.len() - s).min(2048) + 1);
                let chunk = b[s..s + l].to_vec();
                let at = rng.below(b.len() + 1);
                b.splice(at..at, chunk);
            }
        }
    }
}

/// Region table of a little-endian zlib/none log: (map offset in header, off, len).
fn regions(b: &[u8]) -> Option<(bool, Vec<(usize, u64, u64)>)> {
    if b.len() < 24 || &b[..2] != b"3." {
        return None;
    }
    let new = b[2..4] == *b"41";
    let (maps, n) = if new { (32usize, 65usize) } else { (24usize, 17usize) };
    if b.len() < maps + n * 16 {
        return None;
    }
    let mut v = Vec::new();
    for i in 0..n {
        let o = maps + i * 16;
        let off = u64::from_le_bytes(b[o..o + 8].try_into().ok()?);
        let len = u64::from_le_bytes(b[o + 8..o + 16].try_into().ok()?);
        if len > 0 && off.checked_add(len)? <= b.len() as u64 {
            v.push((o, off, len));
        }
    }
    Some((new, v))
}

fn inflate(x: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(x).take(64 << 20).read_to_end(&mut out).ok()?;
    Some(out)
}

fn deflate(x: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(x).unwrap();
    e.finish().unwrap()
}

/// Inflate one region, mutate its records, deflate, and append it at the end of the file.
fn mutate_region(b: &mut Vec<u8>, rng: &mut Rng) -> bool {
    if b.len() < 17 || b[16] != 0 {
        return false;
    }
    let Some((_, regs)) = regions(b) else { return false };
    if regs.is_empty() {
        return false;
    }
    let (map_at, off, len) = regs[rng.below(regs.len())];
    let Some(mut raw) = inflate(&b[off as usize..(off + len) as usize]) else { return false };
    mutate_bytes(&mut raw, rng);
    let z = deflate(&raw);
    let new_off = b.len() as u64;
    b.extend_from_slice(&z);
    b[map_at..map_at + 8].copy_from_slice(&new_off.to_le_bytes());
    b[map_at + 8..map_at + 16].copy_from_slice(&(z.len() as u64).to_le_bytes());
    true
}

fn mutate_header(b: &mut Vec<u8>, rng: &mut Rng) {
    let Some((new, _)) = regions(b) else { return mutate_bytes(b, rng) };
    let (vers, n) = if new { (32 + 65 * 16, 64) } else { (24 + 17 * 16, 16) };
    match rng.below(3) {
        0 if b.len() >= vers + n * 4 => {
            let i = vers + rng.below(n) * 4;
            let v = [0u32, 1, 2, 3, 4, 5, 100, u32::MAX][rng.below(8)];
            b[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        1 => b[16] = [0u8, 1, 2, 3, 255][rng.below(5)],
        _ => {
            let i = (if new { 32 } else { 24 }) + rng.below(if new { 65 } else { 17 }) * 8 * 2 + 8 * rng.below(2);
            if i + 8 <= b.len() {
                let v = INTERESTING[rng.below(INTERESTING.len())];
                b[i..i + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("../../shared/data/darshan"));
    let secs: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(60);
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0x5eed_1234_abcd_0001);
    let mut files = Vec::new();
    collect(&dir, &mut files);
    files.sort();
    let seeds: Vec<Vec<u8>> = files.iter().filter_map(|p| std::fs::read(p).ok()).collect();
    assert!(!seeds.is_empty(), "no *.darshan seeds under {}", dir.display());
    let findings = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join("findings");
    std::panic::set_hook(Box::new(|_| {}));
    let mut rng = Rng(seed | 1);
    let start = Instant::now();
    let (mut n, mut ok, mut err, mut panics, mut slow) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut slowest = Duration::ZERO;
    let limits = Limits::default();
    while start.elapsed() < Duration::from_secs(secs) {
        let mut b = seeds[rng.below(seeds.len())].clone();
        // keep the mutants of the few large logs rarer (they are slow to re-deflate)
        if b.len() > 300_000 && rng.below(8) != 0 {
            continue;
        }
        match rng.below(10) {
            0..=3 => mutate_bytes(&mut b, &mut rng),
            4..=7 => {
                if !mutate_region(&mut b, &mut rng) {
                    mutate_bytes(&mut b, &mut rng)
                }
            }
            _ => mutate_header(&mut b, &mut rng),
        }
        let t = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| decode(&b, limits).map(|l| l.names.len())));
        let dt = t.elapsed();
        slowest = slowest.max(dt);
        n += 1;
        let save = |tag: &str| {
            let _ = std::fs::create_dir_all(&findings);
            let p = findings.join(format!("{tag}-{n}.darshan"));
            let _ = std::fs::write(&p, &b);
            eprintln!("finding: {tag} -> {}", p.display());
        };
        match r {
            Ok(Ok(_)) => ok += 1,
            Ok(Err(_)) => err += 1,
            Err(_) => {
                panics += 1;
                save("panic");
            }
        }
        if dt > Duration::from_secs(2) {
            slow += 1;
            save("slow");
        }
    }
    println!(
        "fuzz_mutate: {} s, {} seeds, {} inputs ({} decoded, {} errors), {} panics, {} slow (>2 s), slowest {:?}",
        start.elapsed().as_secs(),
        seeds.len(),
        n,
        ok,
        err,
        panics,
        slow,
        slowest
    );
    if panics > 0 || slow > 0 {
        std::process::exit(1);
    }
}
