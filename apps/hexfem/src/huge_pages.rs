//! Transparent huge pages for the process's large arrays: [`HugePageAlloc`], the system
//! allocator that also asks the kernel (`madvise(MADV_HUGEPAGE)`) to back the whole 2 MiB pages
//! of every allocation of at least [`THRESHOLD`] bytes with huge pages. A run allocates arrays
//! of hundreds of MB per load step (a rank's AMG set-up, the output's records); with 4 KiB
//! pages the first touch of each page faults. The kernel decides: with its THP mode `never` the
//! advice changes nothing, with `madvise` or `always` it backs the advised ranges with huge pages
//! where it has them. Values never change. `HEXFEM_HUGE_PAGES=off` turns the advice off
//! ([`configure_from_env`], read once at the start of the process).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Allocations of at least this many bytes are advised (two huge pages: at least one whole
/// one lies inside).
pub const THRESHOLD: usize = 4 << 20;

/// The size of a transparent huge page on x86-64 and most aarch64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// Whether large allocations are advised (on unless `HEXFEM_HUGE_PAGES=off`).
static ENABLED: AtomicBool = AtomicBool::new(true);

/// The system allocator, advising huge pages for allocations of [`THRESHOLD`] bytes or more
/// (see the module doc). Every block is the system allocator's, freed by it.
#[derive(Debug, Default, Clone, Copy)]
pub struct HugePageAlloc;

// SAFETY: every call is forwarded to `System` with the caller's arguments; the advice only
// changes how the returned block's pages are backed, never its address, size or contents.
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System.alloc_zeroed`'s.
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` (every block of this allocator does).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `System.realloc`'s.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if new_size > layout.size() {
            advise(p, new_size);
        }
        p
    }
}

/// Advises the block `p` of `len` bytes where it is large enough and the advice is on.
fn advise(p: *mut u8, len: usize) {
    if !p.is_null() && len >= THRESHOLD && ENABLED.load(Ordering::Relaxed) {
        advise_huge_pages(p, len);
    }
}

/// Asks for huge pages on the whole 2 MiB pages inside the `len` bytes at `p` (memory of this
/// process); false where there is none or the kernel refused (no THP support, not Linux).
pub fn advise_huge_pages(p: *mut u8, len: usize) -> bool {
    let start = (p as usize).next_multiple_of(HUGE_PAGE);
    let end = (p as usize).saturating_add(len) / HUGE_PAGE * HUGE_PAGE;
    if end <= start {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: the range lies inside a block this process owns; MADV_HUGEPAGE changes how
        // its pages are backed, not what they hold.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Reads `HEXFEM_HUGE_PAGES` (`on`, the default, or `off`); call it once, first thing in
/// `main`. An error names the variable, its value and the valid choices.
pub fn configure_from_env() -> Result<(), String> {
    match std::env::var("HEXFEM_HUGE_PAGES") {
        Err(std::env::VarError::NotPresent) => Ok(()),
        Ok(v) if v == "on" => {
            ENABLED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Ok(v) if v == "off" => {
            ENABLED.store(false, Ordering::Relaxed);
            Ok(())
        }
        Ok(v) => Err(format!(
            "HEXFEM_HUGE_PAGES={v:?}: valid choices are on (the default) and off"
        )),
        Err(std::env::VarError::NotUnicode(v)) => Err(format!(
            "HEXFEM_HUGE_PAGES={v:?}: valid choices are on (the default) and off"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` of the mapping of `/proc/self/smaps` holding address `a` (Linux).
    fn vm_flags_at(a: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = first.split_once('-') {
                if let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = (lo..hi).contains(&a);
                    continue;
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return Some(flags.to_string());
                }
            }
        }
        None
    }

    #[test]
    fn a_large_block_is_advised_and_keeps_its_values() {
        let alloc = HugePageAlloc;
        let layout = Layout::from_size_align(3 * THRESHOLD, 8).unwrap();
        // SAFETY: a non-zero layout; the block is written, read and freed below.
        let p = unsafe { alloc.alloc_zeroed(layout) };
        assert!(!p.is_null());
        // SAFETY: `p` holds `layout.size()` zeroed bytes.
        let block = unsafe { std::slice::from_raw_parts_mut(p, layout.size()) };
        assert!(block.iter().all(|&b| b == 0));
        block.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        // whether this kernel takes the advice at all (THP built in), asked of a block of its own
        let probe = vec![0u8; 2 * THRESHOLD];
        if advise_huge_pages(probe.as_ptr() as *mut u8, probe.len()) {
            // `hg`: the allocator's advice is on the block's mapping (whatever the THP mode)
            let first_huge = (p as usize).next_multiple_of(HUGE_PAGE);
            let flags = vm_flags_at(first_huge).expect("the block's mapping in /proc/self/smaps");
            assert!(
                flags.split_whitespace().any(|f| f == "hg"),
                "VmFlags {flags}"
            );
        } else {
            eprintln!("SKIP a_large_block_is_advised...: this kernel refuses MADV_HUGEPAGE");
        }
        // SAFETY: the same block and layout, grown.
        let q = unsafe { alloc.realloc(p, layout, 4 * THRESHOLD) };
        assert!(!q.is_null());
        // SAFETY: `q` holds at least the old size's bytes, copied.
        let grown = unsafe { std::slice::from_raw_parts(q, layout.size()) };
        assert!(grown.iter().enumerate().all(|(i, &b)| b == i as u8));
        let new_layout = Layout::from_size_align(4 * THRESHOLD, 8).unwrap();
        // SAFETY: `q` is the live block of `new_layout`.
        unsafe { alloc.dealloc(q, new_layout) };
    }

    #[test]
    fn ranges_without_a_whole_huge_page_are_not_advised() {
        let b = vec![0u8; HUGE_PAGE];
        // at most one page long: no whole aligned huge page inside unless perfectly aligned
        if !(b.as_ptr() as usize).is_multiple_of(HUGE_PAGE) {
            assert!(!advise_huge_pages(b.as_ptr() as *mut u8, b.len()));
        }
        assert!(!advise_huge_pages(b.as_ptr() as *mut u8, 0));
    }
}
