//! Reading at idle priority: a thread whose whole job is to read beside a live run (a session
//! the run serves, the reader of `check` or `inspect`) runs only on the cores the run leaves
//! idle, so what a look costs the run is the memory and caches they share, not its CPU time.
//! On Linux the thread's scheduling policy becomes `SCHED_IDLE` (threads it starts later
//! inherit it); an unprivileged thread cannot go back, so only such threads ask for it.
//! Elsewhere nothing changes.

/// Puts the calling thread at idle priority (see the module's documentation); `false` where
/// the platform has none or refused it, and the thread runs as before.
pub fn read_at_idle_priority() -> bool {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid `sched_param` that outlives the call; pid 0 names the
        // calling thread, whose policy alone changes.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_asks_reads_at_idle_priority_and_others_keep_theirs() {
        // SAFETY: pid 0 names the calling thread; the call reads its policy only.
        let policy = || unsafe { libc::sched_getscheduler(0) };
        let before = policy();
        let (asked, after) = std::thread::spawn(move || (read_at_idle_priority(), policy()))
            .join()
            .expect("the thread");
        assert!(
            asked,
            "an unprivileged thread may always lower its priority"
        );
        assert_eq!(after, libc::SCHED_IDLE);
        assert_eq!(policy(), before, "the calling thread only");
    }
}
