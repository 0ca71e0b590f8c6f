//! The job record: job facts, metadata, exe and mount table.

use std::collections::HashMap;

use super::bytes::{cstr_bytes, is_c_space, word};
use super::header::Header;
use super::output::Job;
use super::{corrupt, Res};

/// darshan-util reads at most one job record of this size from the job region.
pub(super) const JOB_RECORD_SIZE: usize = 4096;
/// sizeof(struct darshan_job) of format 3.41 (7 int64 + 1024 bytes of metadata)
const JOB_STRUCT_341: usize = 7 * 8 + 1024;
const METADATA_LEN: usize = 1024;

pub(super) fn decode_job(h: &Header, buf: &[u8], notes: &mut Vec<String>) -> Res<Job> {
    if buf.len() <= JOB_STRUCT_341 {
        return corrupt(format!("job region too short ({} bytes)", buf.len()));
    }
    let mut jb = [0u8; JOB_RECORD_SIZE];
    jb[..buf.len().min(JOB_RECORD_SIZE)].copy_from_slice(&buf[..buf.len().min(JOB_RECORD_SIZE)]);
    let s = h.swapped;
    let w = |i: usize| word(&jb, i * 8, s) as i64;
    let mut job = Job::default();
    let trailing: &[u8];
    let metadata: &[u8];
    if h.minor >= 41 {
        job.uid = w(0);
        job.start_time_sec = w(1);
        job.start_time_nsec = w(2);
        job.end_time_sec = w(3);
        job.end_time_nsec = w(4);
        job.nprocs = w(5);
        job.jobid = w(6);
        metadata = &jb[56..56 + METADATA_LEN];
        trailing = &jb[JOB_STRUCT_341..];
        job.run_time = (job.end_time_sec as f64 + job.end_time_nsec as f64 / 1e9)
            - (job.start_time_sec as f64 + job.start_time_nsec as f64 / 1e9);
    } else {
        job.uid = w(0);
        job.start_time_sec = w(1);
        job.end_time_sec = w(2);
        job.nprocs = w(3);
        job.jobid = w(4);
        metadata = &jb[40..40 + METADATA_LEN];
        trailing = &jb[40 + METADATA_LEN..];
        job.run_time = job.end_time_sec.wrapping_sub(job.start_time_sec).wrapping_add(1) as f64;
    }
    // metadata: "key=value\n" lines; darshan-util drops what follows the last newline
    let md = String::from_utf8_lossy(cstr_bytes(metadata)).into_owned();
    let mut lines: Vec<&str> = md.split('\n').collect();
    lines.pop();
    let mut index: HashMap<String, usize> = HashMap::new();
    for kv in lines {
        match kv.split_once('=') {
            Some((k, v)) => {
                if let Some(&i) = index.get(k) {
                    job.metadata[i].1 = v.to_string();
                } else {
                    index.insert(k.to_string(), job.metadata.len());
                    job.metadata.push((k.to_string(), v.to_string()));
                }
            }
            None => notes.push(format!("job metadata line without '=' skipped: {kv:?}")),
        }
    }
    // exe: up to the first newline; mount table: one "type\tpath" entry after each newline
    let text = cstr_bytes(trailing);
    if let Some(nl) = text.iter().position(|&c| c == b'\n') {
        job.exe = String::from_utf8_lossy(&text[..nl]).into_owned();
    }
    let mut mounts: Vec<(String, String)> = Vec::new();
    for (i, _) in text.iter().enumerate().filter(|(_, &c)| c == b'\n') {
        let mut p = i + 1;
        let mut tok = || -> Option<&[u8]> {
            while p < text.len() && is_c_space(text[p]) {
                p += 1;
            }
            let st = p;
            while p < text.len() && !is_c_space(text[p]) {
                p += 1;
            }
            if p == st {
                None
            } else {
                Some(&text[st..p])
            }
        };
        match (tok(), tok()) {
            (Some(t), Some(path)) => mounts.push((
                String::from_utf8_lossy(path).into_owned(),
                String::from_utf8_lossy(t).into_owned(),
            )),
            _ => {
                notes.push("poorly formatted mount table: entries after the first bad line dropped".into());
                break;
            }
        }
    }
    // longest mount point first (stable, as glibc's merge-sort qsort)
    mounts.sort_by_key(|m| std::cmp::Reverse(m.0.len()));
    job.mounts = mounts;
    Ok(job)
}
