//! Readers beside a live run yield to it: a live session's thread in the run, and a `check` or
//! `inspect` process reading through one, run at the lowest CPU priority (nice 19) and the
//! lowest best-effort disk priority, so that on a busy machine the run's appends and commits
//! are scheduled first and a check takes what they leave. On an idle machine nothing changes:
//! the check gets every idle cycle and is as fast as before. A niced thread is never starved
//! (unlike `SCHED_IDLE`), so a session still ends within its deadlines.
//!
//! The bill (a mechanism kept for latency): what it keeps is the run's ack p99 with a check
//! beside it; it costs this file (two libc calls, each one unsafe line), no thread and no
//! memory. Linux only; elsewhere it does nothing. `SEQUENCER_READER_PRIORITY=normal` leaves
//! priorities alone (for a paired run: `scripts/bench-check-beside.sh` runs both and
//! docs/BENCHMARKS.md has the figures).

/// What turns the yielding off (`normal`); anything else, or unset, leaves it on.
pub const READER_PRIORITY_ENV: &str = "SEQUENCER_READER_PRIORITY";

/// Lowers the calling thread's CPU and disk priority (threads it starts later inherit both),
/// unless [`READER_PRIORITY_ENV`] is `normal`. Returns whether it did. Failing to change a
/// priority is not an error: the reader goes on at the priority it has.
pub fn yield_to_the_run() -> bool {
    if std::env::var(READER_PRIORITY_ENV).is_ok_and(|v| v == "normal") {
        return false;
    }
    lower_this_thread()
}

#[cfg(target_os = "linux")]
fn lower_this_thread() -> bool {
    /// `ioprio_set`'s "who": a thread (Linux keeps both priorities per thread; 0 is the caller).
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    /// The best-effort class (2) at its lowest level (7), as `IOPRIO_PRIO_VALUE` makes it.
    const BEST_EFFORT_LOWEST: libc::c_long = (2 << 13) | 7;
    // SAFETY: both calls take plain integers and change only this thread's scheduling.
    let cpu = unsafe { libc::setpriority(libc::PRIO_PROCESS as _, 0, 19) } == 0;
    // SAFETY: as above.
    let disk = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0,
            BEST_EFFORT_LOWEST,
        )
    } == 0;
    cpu || disk
}

#[cfg(not(target_os = "linux"))]
fn lower_this_thread() -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// This thread's nice value.
    fn nice() -> i32 {
        // SAFETY: reads this thread's priority.
        unsafe { libc::getpriority(libc::PRIO_PROCESS as _, 0) }
    }

    #[test]
    fn a_reader_thread_yields_and_the_threads_beside_it_keep_their_priority() {
        let before = nice();
        let lowered = std::thread::spawn(|| (yield_to_the_run(), nice()))
            .join()
            .expect("the reader thread");
        assert_eq!(lowered, (true, 19));
        assert_eq!(nice(), before, "only the thread that yielded is lowered");
    }
}
