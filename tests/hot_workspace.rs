//! A start of the workspace the last transaction numbered looks where that transaction left
//! its numbers in the cache before hashing: the place is checked, so a workspace evicted since,
//! or another workspace now in that place, never lends its numbers.

use sequencer::testkit::{Driver, MemStorage};
use sequencer::{Params, Start};

/// Kind 1 with two sequences; the cache holds two numbers: one workspace.
fn ready() -> Driver {
    let p = Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 100)
        .with_lru_cache_size(2);
    let mut d = Driver::new(p, MemStorage::new()).unwrap();
    d.run().unwrap();
    d
}

/// One event on `ws` taking a number of each sequence, flushed and written: its numbers.
fn event(d: &mut Driver, ws: u64) -> (u64, u64) {
    assert!(matches!(d.start(1, ws).unwrap(), Start::Started(_)));
    let n = (d.seq.next(1).unwrap(), d.seq.next(2).unwrap());
    d.seq.flush().unwrap();
    d.run().unwrap();
    n
}

#[test]
fn a_hot_workspace_continues_from_its_own_numbers_wherever_the_cache_moved_them() {
    let mut d = ready();
    assert_eq!(event(&mut d, 7), (1, 100));
    assert_eq!(event(&mut d, 7), (2, 101), "the same workspace again");
    // 8 evicts 7 and takes its place in the cache; 7 comes back from storage elsewhere or
    // in the same place, and 8 is evicted in turn.
    assert_eq!(event(&mut d, 8), (1, 100), "another workspace in 7's place");
    assert_eq!(event(&mut d, 7), (3, 102), "7 after its place held 8");
    assert_eq!(event(&mut d, 7), (4, 103));
    assert_eq!(event(&mut d, 8), (2, 101), "8 after its place held 7");
    // An actualization empties the cache: the last place names nothing.
    d.seq.actualize().unwrap();
    d.run().unwrap();
    assert_eq!(event(&mut d, 8), (3, 102), "8 after an actualization");
    assert_eq!(event(&mut d, 7), (5, 104));
}

/// Kind 1 takes sequences 1 and 2, kind 2 sequence 2 alone (the same numbers of a workspace);
/// the cache holds `lru` numbers.
fn two_kinds(lru: usize) -> Driver {
    let p = Params::new()
        .with_seq(1, 1, 1)
        .with_seq(1, 2, 100)
        .with_seq(2, 2, 100)
        .with_lru_cache_size(lru);
    let mut d = Driver::new(p, MemStorage::new()).unwrap();
    d.run().unwrap();
    d
}

/// One event of `kind` on `ws` taking one number of each of `seqs`, flushed, not yet written.
fn flushed(d: &mut Driver, kind: u16, ws: u64, seqs: &[u16]) -> Vec<u64> {
    assert!(matches!(d.start(kind, ws).unwrap(), Start::Started(_)));
    let n = seqs.iter().map(|&s| d.seq.next(s).unwrap()).collect();
    d.seq.flush().unwrap();
    n
}

#[test]
fn a_flush_that_leaves_its_cache_entry_behind_is_caught_up_before_any_other_start_reads_it() {
    let mut d = two_kinds(4);
    // A hot workspace: each start of it continues the last flush's numbers directly.
    assert_eq!(flushed(&mut d, 1, 7, &[1, 2]), [1, 100]);
    assert_eq!(flushed(&mut d, 1, 7, &[1, 2]), [2, 101]);
    assert_eq!(flushed(&mut d, 1, 7, &[2]), [102]);
    // The same workspace through another kind reads the cache: it sees 102 as taken.
    assert_eq!(flushed(&mut d, 2, 7, &[2]), [103]);
    assert_eq!(flushed(&mut d, 1, 7, &[1, 2]), [3, 104]);
    // Another workspace in between, then the hot one again, nothing written yet.
    assert_eq!(flushed(&mut d, 1, 8, &[2]), [100]);
    assert_eq!(flushed(&mut d, 1, 7, &[1, 2]), [4, 105]);
    d.run().unwrap();
    assert_eq!(flushed(&mut d, 2, 7, &[2]), [106]);
}

#[test]
fn a_hot_workspace_evicted_while_its_cache_entry_is_behind_loses_no_number() {
    // Room for one workspace of kind 1: every other workspace evicts the hot one.
    let mut d = two_kinds(2);
    assert_eq!(flushed(&mut d, 1, 7, &[1, 2]), [1, 100]);
    assert_eq!(flushed(&mut d, 1, 7, &[1, 2]), [2, 101]);
    // Numbers of 8 loaded ahead (as a batch does) take 7's room while 7's entry is behind.
    d.seq.preload(1, 8, &[0, 0]).unwrap();
    assert_eq!(flushed(&mut d, 1, 7, &[1, 2]), [3, 102]);
    assert_eq!(flushed(&mut d, 1, 8, &[1]), [1]);
    assert_eq!(
        flushed(&mut d, 1, 7, &[1, 2]),
        [4, 103],
        "7 after 8 evicted it"
    );
    assert_eq!(flushed(&mut d, 2, 7, &[2]), [104]);
    d.run().unwrap();
    assert_eq!(flushed(&mut d, 1, 8, &[1, 2]), [2, 100]);
    assert_eq!(flushed(&mut d, 1, 7, &[1, 2]), [5, 105]);
}
