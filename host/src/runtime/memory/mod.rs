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
//! asks the kernel which of the first memory's lowest
//! [`WINDOW_PAGES`](mapping::WINDOW_PAGES) pages are resident
//! (`mincore`) and populates those in every later memory, one `madvise` per run of pages. The
//! set follows the component's layout without being told it; if the first instance is still
//! being made when the second memory is (two threads instantiating at once) or has already run
//! transactions, it is smaller or larger than ideal, which costs page faults or resident memory,
//! never correctness: every page of the memory reads as zero until written either way.
//!
//! Once the pages are learned, memories are made ahead on a thread of their own, where the
//! machine has more than one core ([`stock`]): an open takes one ready.
//!
//! Pooled engines do not need this: a freed slot keeps the same pages resident.
//!
//! A mechanism for speed (docs/ARCHITECTURE.md, "What exists only for speed"): with
//! `mapping.rs`, 548 lines and 19 `unsafe`, for W6 on demand create 62.4 → 31.4 µs and until
//! actualized 60.3 → 31.7 (eight alternating rounds, 2026-12-02). Remove it (and the stock) if
//! pooled instances become the default.

mod mapping;
mod stock;

use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use wasmtime::{LinearMemory, MemoryCreator, MemoryType};

use mapping::{Mapping, page_size};
use stock::{Shape, Stock};

/// Makes on-demand linear memories and populates in each the pages its first one wrote.
#[derive(Default)]
pub(crate) struct PrefaultingMemoryCreator {
    /// The pages to populate in each new memory (bit `i`: page `i`), once learned.
    learned: OnceLock<u64>,
    /// The memory to learn from: the first one made that is still alive.
    probe: Mutex<Weak<Mapping>>,
    /// Memories made ahead, started with the first memory made once the pages are learned;
    /// none on one core (the thread would take the core from the caller it works for) or if
    /// the thread could not start.
    stock: OnceLock<Option<Arc<Stock>>>,
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

    /// The memories made ahead, started on first use (none on one core, or if the thread could
    /// not start).
    fn stock(&self) -> Option<&Arc<Stock>> {
        self.stock
            .get_or_init(|| {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                if cores > 1 { Stock::start() } else { None }
            })
            .as_ref()
    }
}

impl Drop for PrefaultingMemoryCreator {
    fn drop(&mut self) {
        if let Some(Some(stock)) = self.stock.get() {
            stock.close();
        }
    }
}

// SAFETY: every memory it returns is a private anonymous mapping (zero-filled, never handed to
// another memory before) of `reserved_size_in_bytes` bytes with `guard_size_in_bytes`
// inaccessible bytes after it (and as many before it), owned by the memory (the creator keeps
// only a weak reference, upgraded while it asks the kernel about the pages), never moved and
// unmapped only when its last owner lets go; the accessible part is exactly `byte_size()` bytes
// from `as_ptr()`, and grows only within the reservation.
unsafe impl MemoryCreator for PrefaultingMemoryCreator {
    fn new_memory(
        &self, _ty: MemoryType, minimum: usize, maximum: Option<usize>,
        reserved_size_in_bytes: Option<usize>, guard_size_in_bytes: usize,
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
        let mut shape = Shape {
            guard,
            capacity,
            minimum,
            page,
            pages: 0,
        };
        if let Some(&pages) = self.learned.get() {
            shape.pages = pages;
            let stock = self.stock();
            let mapping = match stock.and_then(|stock| stock.take(shape)) {
                Some(ready) => ready,
                None => shape.make()?,
            };
            let memory = PrefaultedMemory::new(Arc::new(mapping), capacity, stock.cloned());
            return Ok(Box::new(memory));
        }
        let mapping = Arc::new(shape.make()?);
        mapping.populate(self.pages_for(&mapping), minimum);
        Ok(Box::new(PrefaultedMemory::new(mapping, capacity, None)))
    }
}

/// A linear memory in a [`Mapping`]: its first `mapping.accessible` bytes are readable and
/// writable.
struct PrefaultedMemory {
    /// Taken out only as the memory drops.
    mapping: ManuallyDrop<Arc<Mapping>>,
    capacity: usize,
    /// Where the mapping goes to be unmapped when the memory drops (the stock's thread); none
    /// for the memories made before the stock was.
    stock: Option<Arc<Stock>>,
}

impl PrefaultedMemory {
    fn new(mapping: Arc<Mapping>, capacity: usize, stock: Option<Arc<Stock>>) -> Self {
        Self {
            mapping: ManuallyDrop::new(mapping),
            capacity,
            stock,
        }
    }
}

impl Drop for PrefaultedMemory {
    fn drop(&mut self) {
        // SAFETY: taken once, here, and never used again.
        let mapping = unsafe { ManuallyDrop::take(&mut self.mapping) };
        // The thread unmaps it (or, if it is gone or behind, this does as `mapping` drops).
        let _unmapped_here = match &self.stock {
            Some(stock) => stock.retire(mapping),
            None => Some(mapping),
        };
    }
}

// SAFETY: the memory starts on a page boundary (the mapping's, plus whole guard pages), its size
// is always a whole number of wasm pages, and guard pages follow its reservation.
unsafe impl LinearMemory for PrefaultedMemory {
    fn byte_size(&self) -> usize {
        self.mapping.accessible()
    }

    fn byte_capacity(&self) -> usize {
        self.capacity
    }

    fn grow_to(&mut self, new_size: usize) -> wasmtime::Result<()> {
        self.mapping
            .make_accessible(new_size, self.capacity)
            .map_err(|e| wasmtime::format_err!(e))
    }

    fn as_ptr(&self) -> *mut u8 {
        self.mapping.base() as *mut u8
    }
}

#[cfg(test)]
mod tests {
    use super::mapping::resident_pages;
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

    #[test]
    fn once_learned_memories_come_from_the_stock_fresh_and_zero() {
        let creator = PrefaultingMemoryCreator::default();
        let first = new_memory(&creator);
        write_pages(&*first, &[7, 15]);
        let _second = new_memory(&creator);
        // The first memory made once the pages are learned starts the stock and asks for them.
        let _third = new_memory(&creator);
        let Some(Some(stock)) = creator.stock.get() else {
            if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
                panic!("no stock on a machine with more than one core");
            }
            return;
        };
        stock.until_ready(stock::STOCK);
        let fourth = new_memory(&creator);
        assert_eq!(stock.ready(), stock::STOCK - 1, "taken from the stock");
        assert_eq!(resident(&*fourth), 1 << 7 | 1 << 15);
        // SAFETY: the memory's first 64 KiB are accessible.
        let bytes = unsafe { std::slice::from_raw_parts(fourth.as_ptr(), 64 << 10) };
        assert!(
            bytes.iter().all(|&b| b == 0),
            "never an earlier memory's bytes"
        );
        drop(first);
        drop(fourth);
        drop(creator);
    }
}
