//! A cache of compiled kernels (cubins) on disk, shared by processes, so that a second run does
//! not pay NVRTC again (about 2 s of a GPU run's start-up).
//!
//! The location is `$HEXFEM_KERNEL_CACHE` (`off` disables it), else
//! `$XDG_CACHE_HOME/hexfem/kernels`, else `$HOME/.cache/hexfem/kernels`. An entry is one file,
//! named by a hash of its key and holding the whole key: the kernel source's name and text hash,
//! the defines, the GPU architecture, the NVRTC and driver versions, the options. Invariants:
//! - An entry is used only if its magic, key, length and checksum all match; anything else (a
//!   damaged, truncated, stale or foreign file) is ignored and the kernel compiled again.
//! - Entries are written to a temporary file in the same folder and renamed into place, so a
//!   reader sees a whole entry or none, whatever process dies when.
//! - A cache that cannot be read or written (read-only folder, full disk) only costs the
//!   compilation: it never fails a run. [`kernel_cache_report`] counts what happened.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The first bytes of every entry (format version 1).
const MAGIC: &[u8; 8] = b"HXFKC\x00\x01\n";

/// The environment variable that sets the cache's folder (`off` disables the cache).
pub const KERNEL_CACHE_ENV: &str = "HEXFEM_KERNEL_CACHE";

/// FNV-1a, 64 bits: names entries and checks their contents (not a cryptographic hash: the key
/// is stored whole and compared, so a collision costs only a recompilation).
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A folder of cache entries.
#[derive(Debug, Clone)]
pub(crate) struct DiskCache {
    dir: PathBuf,
}

/// What the process's kernel cache did: where it is and how often it served.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelCacheReport {
    /// The cache's folder; `None` when disabled or no home folder is known.
    pub dir: Option<PathBuf>,
    /// Kernels loaded from the cache.
    pub hits: u64,
    /// Kernels not in the cache (compiled).
    pub misses: u64,
    /// Entries found but ignored (damaged, truncated or stale), then compiled again.
    pub rejected: u64,
    /// Entries written.
    pub stored: u64,
    /// Entries that could not be written (the run went on).
    pub store_failures: u64,
}

static HITS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);
static REJECTED: AtomicU64 = AtomicU64::new(0);
static STORED: AtomicU64 = AtomicU64::new(0);
static STORE_FAILURES: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds spent making kernels ready (see [`kernel_build_seconds`]).
static BUILD_NS: AtomicU64 = AtomicU64::new(0);

/// Seconds this process has spent making kernels ready so far: compiled by NVRTC or read from
/// this cache, and loaded into a context (a function's first use in a context; later uses cost
/// nothing). Read it before and after a stage to take the compilation out of the stage's time.
pub fn kernel_build_seconds() -> f64 {
    BUILD_NS.load(Ordering::Relaxed) as f64 * 1e-9
}

/// Adds `seconds` to [`kernel_build_seconds`].
pub(crate) fn count_build(seconds: std::time::Duration) {
    let ns = u64::try_from(seconds.as_nanos()).unwrap_or(u64::MAX);
    BUILD_NS.fetch_add(ns, Ordering::Relaxed);
}

/// The counts of this process's kernel cache so far.
pub fn kernel_cache_report() -> KernelCacheReport {
    KernelCacheReport {
        dir: process_cache().map(|c| c.dir.clone()),
        hits: HITS.load(Ordering::Relaxed),
        misses: MISSES.load(Ordering::Relaxed),
        rejected: REJECTED.load(Ordering::Relaxed),
        stored: STORED.load(Ordering::Relaxed),
        store_failures: STORE_FAILURES.load(Ordering::Relaxed),
    }
}

/// The process's cache, from the environment (read once).
pub(crate) fn process_cache() -> Option<&'static DiskCache> {
    static CACHE: OnceLock<Option<DiskCache>> = OnceLock::new();
    CACHE
        .get_or_init(|| {
            cache_dir(
                std::env::var_os(KERNEL_CACHE_ENV),
                std::env::var_os("XDG_CACHE_HOME"),
                std::env::var_os("HOME"),
            )
            .map(DiskCache::new)
        })
        .as_ref()
}

/// The cache folder chosen from `$HEXFEM_KERNEL_CACHE`, `$XDG_CACHE_HOME` and `$HOME`.
fn cache_dir(
    explicit: Option<std::ffi::OsString>,
    xdg: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let nonempty = |v: Option<std::ffi::OsString>| v.filter(|v| !v.is_empty());
    if let Some(dir) = nonempty(explicit) {
        let off = matches!(
            dir.to_str().map(str::to_ascii_lowercase).as_deref(),
            Some("off" | "0" | "false" | "none")
        );
        return (!off).then(|| PathBuf::from(dir));
    }
    if let Some(xdg) = nonempty(xdg) {
        return Some(PathBuf::from(xdg).join("hexfem").join("kernels"));
    }
    nonempty(home).map(|h| {
        PathBuf::from(h)
            .join(".cache")
            .join("hexfem")
            .join("kernels")
    })
}

impl DiskCache {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir
            .join(format!("{:016x}.cubin", fnv1a64(key.as_bytes())))
    }

    /// The entry of `key`, if present and whole; counts a hit, a miss or a rejection.
    pub(crate) fn load(&self, key: &str) -> Option<Vec<u8>> {
        let Ok(bytes) = fs::read(self.path(key)) else {
            MISSES.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        match decode(&bytes, key) {
            Some(payload) => {
                HITS.fetch_add(1, Ordering::Relaxed);
                Some(payload.to_vec())
            }
            None => {
                REJECTED.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Writes the entry of `key` atomically (temporary file, then rename); a failure is
    /// counted and otherwise ignored.
    pub(crate) fn store(&self, key: &str, payload: &[u8]) {
        match self.try_store(key, payload) {
            Ok(()) => STORED.fetch_add(1, Ordering::Relaxed),
            Err(_) => STORE_FAILURES.fetch_add(1, Ordering::Relaxed),
        };
    }

    fn try_store(&self, key: &str, payload: &[u8]) -> std::io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let target = self.path(key);
        let tmp = temporary_name(&target);
        let result = (|| {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(&encode(key, payload))?;
            f.sync_all()?;
            fs::rename(&tmp, &target)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

/// A name beside `target` unique to this process and call.
fn temporary_name(target: &Path) -> PathBuf {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.{n}.tmp", std::process::id()));
    target.with_file_name(name)
}

/// `MAGIC | key length (u32 LE) | key | payload length (u64 LE) | FNV-1a of payload (u64 LE) | payload`.
fn encode(key: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + 20 + key.len() + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv1a64(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of an entry for `key`, or `None` unless every field checks.
fn decode<'a>(bytes: &'a [u8], key: &str) -> Option<&'a [u8]> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (len, rest) = rest.split_first_chunk::<4>()?;
    let key_len = u32::from_le_bytes(*len) as usize;
    if rest.get(..key_len)? != key.as_bytes() {
        return None;
    }
    let rest = &rest[key_len..];
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let (sum, payload) = rest.split_first_chunk::<8>()?;
    let ok = u64::from_le_bytes(*len) == payload.len() as u64
        && u64::from_le_bytes(*sum) == fnv1a64(payload)
        && !payload.is_empty();
    ok.then_some(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("hexfem-kernel-cache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn an_entry_round_trips_and_a_different_key_misses() {
        let dir = scratch("roundtrip");
        let cache = DiskCache::new(dir.clone());
        let payload = b"\x7fELF a cubin".to_vec();
        assert_eq!(cache.load("jacobi|sm_90"), None);
        cache.store("jacobi|sm_90", &payload);
        assert_eq!(cache.load("jacobi|sm_90"), Some(payload));
        // another architecture (or driver, or source) is another key: a miss, never a wrong cubin
        assert_eq!(cache.load("jacobi|sm_80"), None);
        // no temporary file is left behind
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_damaged_truncated_or_foreign_entry_is_ignored() {
        let dir = scratch("damaged");
        let cache = DiskCache::new(dir.clone());
        let key = "spmv|sm_90|BS=3";
        let payload: Vec<u8> = (0..=255).collect();
        let whole = encode(key, &payload);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("one byte flipped in the payload", {
                let mut b = whole.clone();
                let last = b.len() - 1;
                b[last] ^= 1;
                b
            }),
            ("truncated", whole[..whole.len() - 7].to_vec()),
            ("empty", Vec::new()),
            ("wrong magic", {
                let mut b = whole.clone();
                b[0] = b'X';
                b
            }),
            (
                "the entry of another key",
                encode("spmv|sm_80|BS=3", &payload),
            ),
            ("a key length past the end", {
                let mut b = whole.clone();
                b[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
                b
            }),
        ];
        for (what, bytes) in cases {
            fs::create_dir_all(&dir).unwrap();
            fs::write(cache.path(key), &bytes).unwrap();
            assert_eq!(cache.load(key), None, "{what}");
            // the next store repairs it
            cache.store(key, &payload);
            assert_eq!(
                cache.load(key).as_deref(),
                Some(payload.as_slice()),
                "{what}"
            );
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_cache_that_cannot_be_written_costs_nothing_but_the_store() {
        // a file where the folder should be: create_dir_all fails whatever the user's rights
        let dir = scratch("blocked");
        fs::write(&dir, b"not a folder").unwrap();
        let cache = DiskCache::new(dir.join("kernels"));
        let before = kernel_cache_report().store_failures;
        cache.store("k", b"cubin");
        assert!(kernel_cache_report().store_failures > before);
        assert_eq!(cache.load("k"), None);
        fs::remove_file(dir).unwrap();
    }

    #[test]
    fn the_location_follows_the_environment() {
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        assert_eq!(
            cache_dir(os("/scratch/k"), os("/x"), os("/home/u")),
            Some(PathBuf::from("/scratch/k"))
        );
        assert_eq!(cache_dir(os("off"), os("/x"), os("/home/u")), None);
        assert_eq!(cache_dir(os("OFF"), None, None), None);
        assert_eq!(
            cache_dir(None, os("/x"), os("/home/u")),
            Some(PathBuf::from("/x/hexfem/kernels"))
        );
        assert_eq!(
            cache_dir(os(""), os(""), os("/home/u")),
            Some(PathBuf::from("/home/u/.cache/hexfem/kernels"))
        );
        assert_eq!(cache_dir(None, None, None), None);
    }
}
