//! Linear memories for on-demand engines (Linux): reserved as wasmtime reserves its own (a
//! guard region before and after, inaccessible beyond the memory's size), but with the pages an
//! instance writes on its way in allocated by `madvise(MADV_POPULATE_WRITE)` rather than by a
//! page fault each.
//!
//! Why: a fresh anonymous page that is read before it is written is first mapped to the
//! kernel's shared zero page, and the write that follows replaces that mapping, which flushes
//! the TLB of every core the process runs on (an inter-processor interrupt, costly in a virtual
//! machine). A sequencer's instance faults in five pages of its memory while it is made (the
//! top of its stack, its data, its first heap pages, the end of its initial heap); populated
//! for writing, they are allocated and zeroed with nothing to flush (W6 on demand).
//!
//! Which pages: the creator learns them from its first memory. When it makes the second, it
//! asks the kernel which of the first memory's lowest [`WINDOW_PAGES`] pages are resident
//! (`mincore`) and populates those in every later memory, one `madvise` per run of pages. The
//! set follows the component's layout without being told it; if the first instance is still
//! being made when the second memory is (two threads instantiating at once) or has already run
//! transactions, it is smaller or larger than ideal, which costs page faults or resident memory,
//! never correctness: every page of the memory reads as zero until written either way.
//!
//! Pooled engines do not need this: a freed slot keeps the same pages resident.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use wasmtime::{LinearMemory, MemoryCreator, MemoryType};

/// How many of a memory's lowest pages the creator learns about and may populate (256 KiB with
/// 4 KiB pages: a sequencer's initial memory is 64 KiB).
const WINDOW_PAGES: usize = 64;

/// Makes on-demand linear memories and populates in each the pages its first one wrote.
#[derive(Default)]
pub(crate) struct PrefaultingMemoryCreator {
    /// The pages to populate in each new memory (bit `i`: page `i`), once learned.
    learned: OnceLock<u64>,
    /// The memory to learn from: the first one made that is still alive.
    probe: Mutex<Weak<Mapping>>,
}

impl PrefaultingMemoryCreator {
    /// The pages to populate in a new memory: those learned, else those resident in the probe
    /// (learned from now on), else none (`mapping` becomes the probe).
    fn pages_for(&self, mapping: &Arc<Mapping>) -> u64 {
        if let Some(&pages) = self.learned.get() {
            return pages;
        }
        let mut probe = self.probe.lock().unwrap_or_else(PoisonError::into_inner);
        match probe.upgrade() {
            Some(first) => *self.learned.get_or_init(|| first.resident_pages()),
            None => {
                *probe = Arc::downgrade(mapping);
                0
            }
        }
    }
}

// SAFETY: every memory it returns is a private anonymous mapping (zero-filled) of
// `reserved_size_in_bytes` bytes with `guard_size_in_bytes` inaccessible bytes after it (and as
// many before it), owned by the memory (the creator keeps only a weak reference, upgraded while
// it asks the kernel about the pages), never moved and unmapped only when its last owner lets
// go; the accessible part is exactly `byte_size()` bytes from `as_ptr()`, and grows only within
// the reservation.
unsafe impl MemoryCreator for PrefaultingMemoryCreator {
    fn new_memory(
        &self,
        _ty: MemoryType,
        minimum: usize,
        maximum: Option<usize>,
        reserved_size_in_bytes: Option<usize>,
        guard_size_in_bytes: usize,
    ) -> Result<Box<dyn LinearMemory>, String> {
        let page = page_size();
        // wasmtime always passes a reservation; without one, reserve the maximum (or the
        // minimum) so that the memory never moves.
        let capacity = reserved_size_in_bytes
            .or(maximum)
            .unwrap_or(minimum)
            .max(minimum);
        let capacity = capacity
            .checked_next_multiple_of(page)
            .ok_or("memory reservation overflows")?;
        let guard = guard_size_in_bytes
            .checked_next_multiple_of(page)
            .ok_or("guard size overflows")?;
        let mapping = Arc::new(Mapping::reserve(guard, capacity, guard, page)?);
        let mut memory = PrefaultedMemory { mapping, capacity };
        memory.make_accessible(minimum)?;
        let pages = self.pages_for(&memory.mapping);
        memory.mapping.populate(pages, minimum);
        Ok(Box::new(memory))
    }
}

/// One reserved region: `pre` inaccessible bytes, then the memory's capacity, then the guard.
struct Mapping {
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
    fn reserve(pre: usize, capacity: usize, post: usize, page: usize) -> Result<Self, String> {
        let len = pre
            .checked_add(capacity)
            .and_then(|n| n.checked_add(post))
            .ok_or("memory reservation overflows")?;
        // SAFETY: a new private anonymous mapping at an address of the kernel's choosing,
        // touching no existing memory.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return Err(format!(
                "mmap of {len:#x} bytes for a linear memory failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(Self {
            start: start as usize,
            len,
            pre,
            page,
            accessible: Default::default(),
        })
    }

    fn base(&self) -> usize {
        self.start + self.pre
    }

    /// Which of the lowest [`WINDOW_PAGES`] accessible pages are resident (bit `i`: page `i`).
    fn resident_pages(&self) -> u64 {
        let accessible = self.accessible.load(Ordering::Acquire);
        // SAFETY: the mapping is alive (borrowed) and its first `accessible` bytes are mapped.
        unsafe { resident_pages(self.base(), accessible, self.page) }
    }

    /// Allocates for writing the pages of `pages` (bit `i`: page `i`) that lie in the first
    /// `accessible` bytes, one `madvise` per run of consecutive pages. Best effort: a kernel
    /// without `MADV_POPULATE_WRITE` (before Linux 5.14) refuses it, and those pages are then
    /// faulted in on first use as any others are.
    fn populate(&self, pages: u64, accessible: usize) {
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
        // owner, the memory or the creator reading its pages, is letting go).
        unsafe { libc::munmap(self.start as *mut libc::c_void, self.len) };
    }
}

/// A linear memory in a [`Mapping`]: its first `mapping.accessible` bytes are readable and
/// writable.
struct PrefaultedMemory {
    mapping: Arc<Mapping>,
    capacity: usize,
}

impl PrefaultedMemory {
    fn size(&self) -> usize {
        self.mapping.accessible.load(Ordering::Acquire)
    }

    /// Makes the memory `new_size` bytes long (never shorter).
    fn make_accessible(&mut self, new_size: usize) -> Result<(), String> {
        if new_size > self.capacity {
            return Err(format!(
                "a linear memory of {new_size:#x} bytes exceeds its reservation of {:#x}",
                self.capacity
            ));
        }
        let size = self.size();
        if new_size <= size {
            return Ok(());
        }
        let from = self.mapping.base() + size;
        // SAFETY: `[from, base + new_size)` lies inside the mapping (checked above) and holds
        // no accessible memory yet, so no reference to it exists.
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
        self.mapping.accessible.store(new_size, Ordering::Release);
        Ok(())
    }
}

// SAFETY: the memory starts on a page boundary (the mapping's, plus whole guard pages), its size
// is always a whole number of wasm pages, and guard pages follow its reservation.
unsafe impl LinearMemory for PrefaultedMemory {
    fn byte_size(&self) -> usize {
        self.size()
    }

    fn byte_capacity(&self) -> usize {
        self.capacity
    }

    fn grow_to(&mut self, new_size: usize) -> wasmtime::Result<()> {
        self.make_accessible(new_size)
            .map_err(|e| wasmtime::format_err!(e))
    }

    fn as_ptr(&self) -> *mut u8 {
        self.mapping.base() as *mut u8
    }
}

/// Which of the lowest [`WINDOW_PAGES`] pages of the `accessible` bytes at `base` are resident
/// (bit `i`: page `i`); none if the kernel does not say.
///
/// # Safety
/// `[base, base + accessible)` must be mapped for the whole call.
unsafe fn resident_pages(base: usize, accessible: usize, page: usize) -> u64 {
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

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_memory(creator: &PrefaultingMemoryCreator) -> Box<dyn LinearMemory> {
        let ty = MemoryType::new(1, None);
        creator
            .new_memory(ty, 64 << 10, None, Some(4 << 30), 32 << 20)
            .expect("memory")
    }

    fn resident(memory: &dyn LinearMemory) -> u64 {
        // SAFETY: the memory is alive and its accessible bytes are mapped.
        unsafe { resident_pages(memory.as_ptr() as usize, memory.byte_size(), page_size()) }
    }

    fn write_pages(memory: &dyn LinearMemory, pages: &[usize]) {
        for &p in pages {
            // SAFETY: each page lies in the memory's accessible 64 KiB.
            unsafe { *memory.as_ptr().add(p * page_size() + 8) = 1 };
        }
    }

    #[test]
    fn later_memories_hold_the_pages_the_first_one_wrote_and_read_as_zero() {
        let creator = PrefaultingMemoryCreator::default();
        let first = new_memory(&creator);
        assert_eq!(
            resident(&*first),
            0,
            "the first memory is learned from, not populated"
        );
        write_pages(&*first, &[7, 8, 15]);
        let second = new_memory(&creator);
        assert_eq!(resident(&*second), 1 << 7 | 1 << 8 | 1 << 15);
        // SAFETY: the memory's first 64 KiB are accessible.
        let bytes = unsafe { std::slice::from_raw_parts(second.as_ptr(), 64 << 10) };
        assert!(
            bytes.iter().all(|&b| b == 0),
            "populated pages read as zero"
        );
        drop(first);
        let third = new_memory(&creator);
        assert_eq!(
            resident(&*third),
            1 << 7 | 1 << 8 | 1 << 15,
            "learned once, kept"
        );
    }

    #[test]
    fn a_memory_grows_within_its_reservation_only() {
        let creator = PrefaultingMemoryCreator::default();
        let mut memory = new_memory(&creator);
        assert_eq!(memory.byte_size(), 64 << 10);
        memory.grow_to(128 << 10).expect("grows");
        assert_eq!(memory.byte_size(), 128 << 10);
        // SAFETY: the grown page is accessible now.
        unsafe { *memory.as_ptr().add(100 << 10) = 7 };
        assert!(memory.grow_to((4 << 30) + (64 << 10)).is_err());
        assert_eq!(
            memory.byte_size(),
            128 << 10,
            "a refused growth changes nothing"
        );
    }

    #[test]
    fn a_first_memory_dropped_before_the_second_hands_the_probe_on() {
        let creator = PrefaultingMemoryCreator::default();
        let first = new_memory(&creator);
        write_pages(&*first, &[3]);
        drop(first);
        let second = new_memory(&creator);
        assert_eq!(resident(&*second), 0, "nothing learned yet");
        write_pages(&*second, &[9]);
        let third = new_memory(&creator);
        assert_eq!(resident(&*third), 1 << 9, "learned from the second");
        drop(second);
    }
}
