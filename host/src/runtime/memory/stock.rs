//! New linear memories made ahead of need, on a thread of their own.
//!
//! Why: making a memory is system calls and page allocation (reserve, make the first bytes
//! accessible, populate the pages an instance writes): over half of an on-demand instance's
//! creation in W6's profile, and work that needs nothing from the instance it is for. Hosts
//! open partitions in bursts (starting, taking over another host's partitions); with a second
//! core, the memory an open needs is made while the open before it runs, and the open takes it
//! ready.
//!
//! What it keeps: up to [`STOCK`] fresh memories of the one shape last asked for, refilled when
//! half are taken. Each is new (a private anonymous mapping nobody has written), never one an
//! instance used: nothing of an earlier instance can be read from it. What it costs: one thread
//! per on-demand engine, asleep unless refilling or unmapping; the stock's pages (five each for a sequencer)
//! while the engine lives; a shape change discards the stock. When the thread falls behind (or
//! could not start), memories are made by the caller as before.
//!
//! The same thread unmaps the memories instances let go of (up to [`RETIRED_MAX`] waiting):
//! an `munmap` of written pages flushes the TLB of every core the process runs on, the larger
//! part of dropping an on-demand instance, and the caller need not wait for it.
//!
//! A mechanism for speed (docs/ARCHITECTURE.md, "What exists only for speed"): 380 lines, two
//! `unsafe`, a thread per on-demand engine and 16 memories held, for W6 on demand create
//! 31.4 → 22.5 µs and until actualized 31.7 → 24.3, at a teardown 38 → 44 µs (eight alternating
//! rounds beside the creator alone, 2026-12-02). Remove it with the creator.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::mapping::Mapping;

/// How many memories the stock holds when full; the thread refills it when half are taken.
pub(super) const STOCK: usize = 16;

/// How many dropped memories may wait for the thread to unmap them; past this a dropped memory
/// is unmapped by whoever drops it.
const RETIRED_MAX: usize = 64;

/// What a new memory must be: its reservation and the pages to populate in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    /// Inaccessible bytes before the memory and after its reservation.
    pub(super) guard: usize,
    /// The memory's reservation: how far it may grow without moving.
    pub(super) capacity: usize,
    /// The memory's initial size, accessible from the start.
    pub(super) minimum: usize,
    /// The system's page size.
    pub(super) page: usize,
    /// The pages to populate (bit `i`: page `i`, see [`Mapping::populate`]).
    pub(super) pages: u64,
}

impl Shape {
    /// A new memory of this shape: reserved, its `minimum` bytes accessible, `pages` populated.
    pub(super) fn make(&self) -> Result<Mapping, String> {
        let mapping = Mapping::reserve(self.guard, self.capacity, self.guard, self.page)?;
        self.finish(mapping)
    }

    /// `n` reservations for memories of this shape, in one system call.
    fn reserve(&self, n: usize) -> Result<Vec<Mapping>, String> {
        Mapping::reserve_many(self.guard, self.capacity, self.guard, self.page, n)
    }

    /// A reservation of this shape made a memory: `minimum` bytes accessible, `pages` populated.
    fn finish(&self, mapping: Mapping) -> Result<Mapping, String> {
        mapping.make_accessible(self.minimum, self.capacity)?;
        mapping.populate(self.pages, self.minimum);
        Ok(mapping)
    }
}

/// Memories made ahead, shared by the engine's memory creator and the thread making them.
#[derive(Default)]
pub(super) struct Stock {
    state: Mutex<State>,
    /// Wakes the thread: memories were taken, the shape changed, or the stock closed.
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// The shape to make; none until asked (or after a memory failed to be made).
    shape: Option<Shape>,
    /// Memories of `shape`, ready to take.
    ready: Vec<Mapping>,
    /// Memories their instances let go of, for the thread to unmap.
    retired: Vec<Arc<Mapping>>,
    /// The thread is to make memories until the stock is full (set when half are taken or
    /// the shape changes, so that a wake-up for any other reason makes nothing).
    filling: bool,
    /// The thread is waiting on `wake` (waking it costs a system call otherwise spared).
    sleeping: bool,
    /// The creator is gone: the thread unmaps the stock and ends.
    closed: bool,
}

impl Stock {
    /// A stock and the thread that fills it; `None` if the thread could not start.
    pub(super) fn start() -> Option<Arc<Self>> {
        let stock = Arc::new(Self::default());
        let filler = stock.clone();
        std::thread::Builder::new()
            .name("sequencer-memory".into())
            .spawn(move || filler.fill())
            .ok()?;
        Some(stock)
    }

    /// A memory of `shape` made ahead, if one is ready. Asking for another shape than the
    /// stock's discards the stock and has the thread make the new shape from now on.
    pub(super) fn take(&self, shape: Shape) -> Option<Mapping> {
        let mut state = self.lock();
        if state.shape != Some(shape) {
            state.shape = Some(shape);
            state.filling = true;
            let discarded = std::mem::take(&mut state.ready);
            self.wake_if_sleeping(state);
            drop(discarded);
            return None;
        }
        let taken = state.ready.pop();
        if state.ready.len() <= STOCK / 2 && !state.filling {
            state.filling = true;
            self.wake_if_sleeping(state);
        }
        taken
    }

    /// Hands a dropped memory to the thread to unmap, sparing the caller the `munmap` (and the
    /// TLB flush of every core it implies); gives it back if the thread is gone or behind.
    pub(super) fn retire(&self, memory: Arc<Mapping>) -> Option<Arc<Mapping>> {
        let mut state = self.lock();
        if state.closed || state.retired.len() >= RETIRED_MAX {
            return Some(memory);
        }
        state.retired.push(memory);
        self.wake_if_sleeping(state);
        None
    }

    /// Has the thread unmap the stock and end (it holds the stock; nothing else does then).
    pub(super) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        self.wake_if_sleeping(state);
    }

    /// How many dropped memories wait to be unmapped (for tests).
    #[cfg(test)]
    pub(super) fn retired(&self) -> usize {
        self.lock().retired.len()
    }

    /// How many memories are ready (for tests).
    #[cfg(test)]
    pub(super) fn ready(&self) -> usize {
        self.lock().ready.len()
    }

    /// Waits (up to 10 s, else panics) until `n` memories are ready (for tests).
    #[cfg(test)]
    pub(super) fn until_ready(&self, n: usize) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.ready() != n {
            assert!(
                std::time::Instant::now() < until,
                "stock stuck at {}",
                self.ready()
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake_if_sleeping(&self, state: MutexGuard<'_, State>) {
        let sleeping = state.sleeping;
        drop(state);
        if sleeping {
            self.wake.notify_one();
        }
    }

    /// The thread: unmaps the memories retired, then makes memories while filling, until the
    /// stock holds [`STOCK`]; sleeps otherwise; ends once closed (unmapping what it holds).
    /// The reservations for a refill are made in one system call and finished one by one, each
    /// ready as soon as it is. A memory that fails to be made stops the making until the next
    /// `take` asks again (the caller then makes its own, and sees the error). Nothing is
    /// unmapped while the lock is held.
    fn fill(self: Arc<Self>) {
        let mut reserved: Vec<Mapping> = Vec::new();
        let mut state = self.lock();
        loop {
            if state.closed {
                let held = (
                    std::mem::take(&mut state.ready),
                    std::mem::take(&mut state.retired),
                );
                drop(state);
                drop((held, reserved));
                return;
            }
            if !state.retired.is_empty() {
                let retired = std::mem::take(&mut state.retired);
                drop(state);
                drop(retired);
                state = self.lock();
                continue;
            }
            let Some(shape) = state.shape.filter(|_| state.filling) else {
                state.sleeping = true;
                state = self
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                state.sleeping = false;
                continue;
            };
            let missing = STOCK.saturating_sub(state.ready.len()).max(1);
            drop(state);
            if reserved.is_empty() {
                reserved = shape.reserve(missing).unwrap_or_default();
            }
            let made = reserved.pop().and_then(|r| shape.finish(r).ok());
            state = self.lock();
            let stale = match made {
                Some(memory) if state.shape == Some(shape) => {
                    state.ready.push(memory);
                    state.filling = state.ready.len() < STOCK;
                    continue;
                }
                // Not made (the making stops until asked again), or made for a shape no longer
                // wanted: what is left for this shape goes.
                made => {
                    if state.shape == Some(shape) {
                        state.shape = None;
                        state.filling = false;
                    }
                    (made, std::mem::take(&mut reserved))
                }
            };
            drop(state);
            drop(stale);
            state = self.lock();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::mapping::page_size;
    use super::*;

    fn shape(pages: u64) -> Shape {
        Shape {
            guard: 32 << 20,
            capacity: 4 << 30,
            minimum: 64 << 10,
            page: page_size(),
            pages,
        }
    }

    #[test]
    fn a_memory_taken_from_the_stock_has_the_shape_asked_and_reads_as_zero() {
        let stock = Stock::start().expect("thread");
        let wanted = shape(1 << 7 | 1 << 15);
        assert!(stock.take(wanted).is_none(), "nothing made before asked");
        stock.until_ready(STOCK);
        let memory = stock.take(wanted).expect("made ahead");
        assert_eq!(memory.accessible(), 64 << 10);
        assert_eq!(memory.resident_pages(), 1 << 7 | 1 << 15);
        // SAFETY: the memory's first 64 KiB are accessible.
        let bytes = unsafe { std::slice::from_raw_parts(memory.base() as *const u8, 64 << 10) };
        assert!(bytes.iter().all(|&b| b == 0));
        stock.close();
    }

    #[test]
    fn the_thread_refills_the_stock_once_half_is_taken() {
        let stock = Stock::start().expect("thread");
        let wanted = shape(0);
        stock.take(wanted);
        stock.until_ready(STOCK);
        let taken: Vec<_> = (0..STOCK / 2 - 1)
            .filter_map(|_| stock.take(wanted))
            .collect();
        assert_eq!(taken.len(), STOCK / 2 - 1);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(stock.ready(), STOCK / 2 + 1, "not woken above half");
        assert!(stock.take(wanted).is_some());
        stock.until_ready(STOCK);
        stock.close();
    }

    #[test]
    fn another_shape_discards_the_stock_and_is_made_from_then_on() {
        let stock = Stock::start().expect("thread");
        let first = shape(1 << 3);
        stock.take(first);
        stock.until_ready(STOCK);
        let second = Shape {
            minimum: 128 << 10,
            ..shape(1 << 20)
        };
        assert!(stock.take(second).is_none(), "none of the new shape yet");
        stock.until_ready(STOCK);
        let memory = stock.take(second).expect("made ahead");
        assert_eq!(memory.accessible(), 128 << 10);
        assert_eq!(memory.resident_pages(), 1 << 20);
        stock.close();
    }

    #[test]
    fn a_closed_stock_is_unmapped_and_its_thread_ends() {
        let stock = Stock::start().expect("thread");
        stock.take(shape(1));
        stock.until_ready(STOCK);
        stock.close();
        let until = Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&stock) > 1 {
            assert!(Instant::now() < until, "the thread still holds the stock");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(stock.ready(), 0, "unmapped as the thread ended");
    }

    #[test]
    fn a_shape_that_cannot_be_made_stops_the_making_until_asked_again() {
        let stock = Stock::start().expect("thread");
        // More address space than any machine has: no reservation can be made.
        let impossible = Shape {
            capacity: usize::MAX / 2,
            ..shape(0)
        };
        assert!(stock.take(impossible).is_none());
        let until = Instant::now() + Duration::from_secs(10);
        while stock.lock().shape.is_some() {
            assert!(Instant::now() < until, "still trying");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(stock.ready(), 0);
        assert!(
            stock.take(shape(0)).is_none(),
            "asked again, for a shape that can be made"
        );
        stock.until_ready(STOCK);
        stock.close();
    }

    #[test]
    fn a_retired_memory_is_unmapped_by_the_thread() {
        let stock = Stock::start().expect("thread");
        let memory = Arc::new(shape(0).make().expect("made"));
        let base = memory.base();
        assert!(stock.retire(memory).is_none(), "taken by the thread");
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            // SAFETY: `mincore` on an unmapped range fails (ENOMEM) rather than faulting.
            let rc = unsafe {
                libc::mincore(
                    base as *mut libc::c_void,
                    page_size(),
                    [0u8; 1].as_mut_ptr(),
                )
            };
            if rc == -1 {
                break;
            }
            assert!(Instant::now() < until, "still mapped");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(stock.retired(), 0);
        stock.close();
        let late = Arc::new(shape(0).make().expect("made"));
        assert!(
            stock.retire(late).is_some(),
            "a closed stock gives the memory back to be unmapped by the caller"
        );
    }
}
