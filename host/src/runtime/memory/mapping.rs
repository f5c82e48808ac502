//! One linear memory's address range: reserved inaccessible, made readable and writable from
//! its first byte as the memory grows, its pages allocated ahead of use on request, unmapped
//! when its last owner lets go.

use std::sync::atomic::{AtomicUsize, Ordering};

/// How many of a memory's lowest pages the creator learns about and may populate (256 KiB with
/// 4 KiB pages: a sequencer's initial memory is 64 KiB).
pub(super) const WINDOW_PAGES: usize = 64;

/// One reserved region: `pre` inaccessible bytes, then the memory's capacity, then the guard.
pub(super) struct Mapping {
    /// The first byte of the whole region (as an address: the pointer is owned, never shared).
    start: usize,
    /// The whole region's length.
    len: usize,
    /// The offset of the memory's first byte from `start`.
    pre: usize,
    /// The system's page size.
    page: usize,
    /// How many bytes from the memory's first are accessible: the memory's size (here, not in
    /// the memory, so that the creator can read it from a probe).
    accessible: AtomicUsize,
}

impl Mapping {
    /// Reserves `pre + capacity + post` bytes, all inaccessible, none allocated.
    pub(super) fn reserve(
        pre: usize, capacity: usize, post: usize, page: usize,
    ) -> Result<Self, String> {
        let mut one = Self::reserve_many(pre, capacity, post, page, 1)?;
        one.pop().ok_or_else(|| "no reservation".to_owned())
    }

    /// `n` reservations as [`reserve`](Self::reserve) makes them, in one system call: adjacent,
    /// each unmapped on its own when dropped.
    pub(super) fn reserve_many(
        pre: usize, capacity: usize, post: usize, page: usize, n: usize,
    ) -> Result<Vec<Self>, String> {
        let len = pre
            .checked_add(capacity)
            .and_then(|x| x.checked_add(post))
            .ok_or("memory reservation overflows")?;
        let total = len.checked_mul(n).ok_or("memory reservation overflows")?;
        // SAFETY: a new private anonymous mapping at an address of the kernel's choosing,
        // touching no existing memory.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return Err(format!(
                "mmap of {total:#x} bytes for {n} linear memories failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok((0..n)
            .map(|i| Self {
                start: start as usize + i * len,
                len,
                pre,
                page,
                accessible: Default::default(),
            })
            .collect())
    }

    /// The address of the memory's first byte.
    pub(super) fn base(&self) -> usize {
        self.start + self.pre
    }

    /// How many bytes from the first are readable and writable.
    pub(super) fn accessible(&self) -> usize {
        self.accessible.load(Ordering::Acquire)
    }

    /// Makes the first `new_size` bytes readable and writable (never fewer), if they fit in
    /// `capacity`.
    pub(super) fn make_accessible(&self, new_size: usize, capacity: usize) -> Result<(), String> {
        if new_size > capacity {
            return Err(format!(
                "a linear memory of {new_size:#x} bytes exceeds its reservation of {capacity:#x}"
            ));
        }
        let size = self.accessible();
        if new_size <= size {
            return Ok(());
        }
        let from = self.base() + size;
        // SAFETY: `[from, base + new_size)` lies inside the mapping (the caller's `capacity` is
        // the one it reserved) and holds no accessible memory yet, so no reference to it exists.
        let rc = unsafe {
            libc::mprotect(
                from as *mut libc::c_void,
                new_size - size,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if rc != 0 {
            return Err(format!(
                "mprotect of {:#x} bytes of a linear memory failed: {}",
                new_size - size,
                std::io::Error::last_os_error()
            ));
        }
        self.accessible.store(new_size, Ordering::Release);
        Ok(())
    }

    /// Which of the lowest [`WINDOW_PAGES`] accessible pages are resident (bit `i`: page `i`).
    pub(super) fn resident_pages(&self) -> u64 {
        // SAFETY: the mapping is alive (borrowed) and its first `accessible` bytes are mapped.
        unsafe { resident_pages(self.base(), self.accessible(), self.page) }
    }

    /// Allocates for writing the pages of `pages` (bit `i`: page `i`) that lie in the first
    /// `accessible` bytes, one `madvise` per run of consecutive pages. Best effort: a kernel
    /// without `MADV_POPULATE_WRITE` (before Linux 5.14) refuses it, and those pages are then
    /// faulted in on first use as any others are.
    pub(super) fn populate(&self, pages: u64, accessible: usize) {
        let limit = (accessible / self.page).min(WINDOW_PAGES);
        let mut i = 0;
        while i < limit {
            if pages >> i & 1 == 0 {
                i += 1;
                continue;
            }
            let first = i;
            while i < limit && pages >> i & 1 == 1 {
                i += 1;
            }
            // SAFETY: the run lies in the accessible part of this mapping, all zero (the
            // memory is new): populating it changes no byte.
            unsafe {
                libc::madvise(
                    (self.base() + first * self.page) as *mut libc::c_void,
                    (i - first) * self.page,
                    libc::MADV_POPULATE_WRITE,
                )
            };
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the region was mapped by `reserve` and nothing refers to it any more (its last
        // owner, the memory, the creator reading its pages or the stock holding it, is letting go).
        unsafe { libc::munmap(self.start as *mut libc::c_void, self.len) };
    }
}

/// Which of the lowest [`WINDOW_PAGES`] pages of the `accessible` bytes at `base` are resident
/// (bit `i`: page `i`); none if the kernel does not say.
///
/// # Safety
/// `[base, base + accessible)` must be mapped for the whole call.
pub(super) unsafe fn resident_pages(base: usize, accessible: usize, page: usize) -> u64 {
    let pages = (accessible / page).min(WINDOW_PAGES);
    let mut resident = [0u8; WINDOW_PAGES];
    // SAFETY: the range is mapped (the caller's promise); the kernel writes one byte per page
    // into `resident`, which has room for `WINDOW_PAGES`.
    let rc = unsafe {
        libc::mincore(
            base as *mut libc::c_void,
            pages * page,
            resident.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return 0;
    }
    resident[..pages]
        .iter()
        .enumerate()
        .filter(|(_, r)| *r & 1 == 1)
        .fold(0, |set, (i, _)| set | 1 << i)
}

/// The system's page size (4 KiB if it does not say).
pub(super) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_made_together_are_unmapped_one_by_one() {
        let page = page_size();
        let mut all = Mapping::reserve_many(page, 16 * page, page, page, 3).expect("reserved");
        for m in &all {
            m.make_accessible(2 * page, 16 * page).expect("accessible");
            // SAFETY: the first two pages of each memory are accessible.
            unsafe { *((m.base() + page) as *mut u8) = 9 };
        }
        let middle = all.remove(1);
        let middle_base = middle.base();
        drop(middle);
        // SAFETY: `mincore` on an unmapped range fails (ENOMEM) rather than faulting.
        let rc = unsafe {
            libc::mincore(
                middle_base as *mut libc::c_void,
                page,
                [0u8; 1].as_mut_ptr(),
            )
        };
        assert_eq!(rc, -1, "the dropped reservation is unmapped");
        for m in &all {
            // SAFETY: the neighbours' first two pages are still accessible.
            assert_eq!(unsafe { *((m.base() + page) as *const u8) }, 9);
            assert_eq!(m.resident_pages(), 1 << 1);
        }
    }

    #[test]
    fn a_memory_is_made_accessible_within_its_capacity_only() {
        let page = page_size();
        let m = Mapping::reserve(page, 4 * page, page, page).expect("reserved");
        assert!(m.make_accessible(5 * page, 4 * page).is_err());
        assert_eq!(m.accessible(), 0);
        m.make_accessible(4 * page, 4 * page).expect("fits");
        assert_eq!(m.accessible(), 4 * page);
        m.make_accessible(page, 4 * page).expect("never shrinks");
        assert_eq!(m.accessible(), 4 * page);
    }
}
