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
