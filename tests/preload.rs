//! Reading many workspaces' numbers ahead of their starts (`loads_ahead` + `preload`): the
//! path of a caller that numbers a batch of events and reads storage once for all of them.

use sequencer::testkit::{Driver, MemStorage};
use sequencer::{Error, Params, SeqValue, Start};

fn params() -> Params {
    Params::new().with_seq(1, 1, 1).with_seq(1, 2, 100)
}

fn ready(storage: MemStorage) -> Driver {
    let mut d = Driver::new(params(), storage).unwrap();
    d.run().unwrap();
    d
}

fn ahead(d: &Driver, ws: &[u64]) -> Vec<u64> {
    let mut out = Vec::new();
    d.seq.loads_ahead(1, ws, &mut out);
    out
}

#[test]
fn loads_ahead_names_each_workspace_not_in_memory_once() {
    let mut d = ready(MemStorage::new());
    d.event(1, 7, &[1]).unwrap().unwrap();
    assert_eq!(ahead(&d, &[7, 8, 9, 8]), vec![8, 9]);
}

#[test]
fn preloaded_workspaces_start_without_a_load_and_continue_from_storage() {
    let mut storage = MemStorage::new();
    storage.write_values(&[SeqValue::new(8, 1, 41), SeqValue::new(8, 2, 500)]);
    let mut d = ready(storage);
    assert_eq!(ahead(&d, &[8]), vec![8]);
    d.seq.preload(1, 8, &[41, 500]).unwrap();
    assert_eq!(ahead(&d, &[8]), Vec::<u64>::new());
    // `seq.start`, not the driver's: a load would come back as `Start::Load`.
    assert!(matches!(d.seq.start(1, 8), Ok(Start::Started(1))));
    assert_eq!(d.seq.next(1), Ok(42));
    assert_eq!(d.seq.next(2), Ok(501));
}

#[test]
fn preload_never_lowers_numbers_held_in_memory() {
    let mut d = ready(MemStorage::new());
    d.storage.faults.hold_writes = true;
    d.event(1, 7, &[1, 1, 1]).unwrap().unwrap();
    d.run().unwrap();
    // Storage still says 0 (the write is held); memory says 3.
    d.seq.preload(1, 7, &[0, 0]).unwrap();
    let (_, numbers) = d.event(1, 7, &[1, 2]).unwrap().unwrap();
    assert_eq!(numbers, vec![4, 100]);
}

#[test]
fn preload_refuses_the_wrong_count_and_an_unknown_kind_and_changes_nothing() {
    let mut d = ready(MemStorage::new());
    assert_eq!(
        d.seq.preload(1, 8, &[5]),
        Err(Error::MalformedNumbers {
            expected: 2,
            got: 1
        })
    );
    assert_eq!(d.seq.preload(9, 8, &[5, 5]), Err(Error::UnknownWsKind(9)));
    assert_eq!(ahead(&d, &[8]), vec![8]);
}

#[test]
fn nothing_is_read_ahead_or_preloaded_while_actualizing() {
    let mut d = Driver::new(params(), MemStorage::new()).unwrap();
    assert_eq!(ahead(&d, &[8]), Vec::<u64>::new());
    d.seq.preload(1, 8, &[1000, 1000]).unwrap();
    d.run().unwrap();
    let (_, numbers) = d.event(1, 8, &[1]).unwrap().unwrap();
    assert_eq!(
        numbers,
        vec![1],
        "the preload while actualizing was not taken"
    );
}
