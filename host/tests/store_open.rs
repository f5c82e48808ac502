//! The library's storage rules, called without the binary: `store::open` records the layout in
//! a new store and refuses to number it by another (before writing anything), a store made
//! before layouts were recorded is refused when it holds a partition the layout lacks, URLs
//! parse once, and `check_store` finds numbers issued twice across partitions.

mod common;

use sequencer::{Params, SeqValue};
use sequencer_host::MemoryStorage;
use sequencer_host::store::layout::{LayoutRefusal, settle};
use sequencer_host::store::{
    self, CheckError, Layout, OpenError, OpenOptions, PlogPlace, StoreReader, StoreUrl, check_store,
};

fn layout(partitions: u32) -> Layout {
    Layout::from_params(partitions, &Params::new().with_seq(1, 1, 1))
        .expect("one kind")
        .named(1, "record-id")
}

fn options(dir: &std::path::Path, partitions: u32) -> OpenOptions {
    OpenOptions::new().data(dir).layout(layout(partitions))
}

#[test]
fn store_urls_parse_once_into_the_backend_names() {
    let cases = [
        ("memory", StoreUrl::Memory, "memory"),
        ("redb", StoreUrl::Redb(None), "redb"),
        ("embedded", StoreUrl::Redb(None), "redb"),
        ("redb:/d", StoreUrl::Redb(Some("/d".into())), "redb"),
        ("objects", StoreUrl::Objects(None), "objects"),
        (
            "objects:/o",
            StoreUrl::Objects(Some("/o".into())),
            "objects",
        ),
        (
            "objects:s3://b/p",
            StoreUrl::ObjectsS3("s3://b/p".into()),
            "objects",
        ),
        (
            "etcd://h:1,h:2",
            StoreUrl::Etcd("etcd://h:1,h:2".into()),
            "etcd",
        ),
        (
            "etcd://h:1,h:2?plog=objects:/o",
            StoreUrl::EtcdObjects {
                etcd: "etcd://h:1,h:2".into(),
                plog: PlogPlace::Dir("/o".into()),
            },
            "etcd",
        ),
        (
            "etcd://h:1?plog=objects:s3://b/p",
            StoreUrl::EtcdObjects {
                etcd: "etcd://h:1".into(),
                plog: PlogPlace::S3("s3://b/p".into()),
            },
            "etcd",
        ),
    ];
    for (text, url, backend) in cases {
        let parsed: StoreUrl = text.parse().expect(text);
        assert_eq!(parsed, url, "{text}");
        assert_eq!(parsed.backend(), backend, "{text}");
        let again: StoreUrl = parsed.to_string().parse().expect("its own text");
        assert_eq!(again, parsed, "{text} shown and read back");
    }
    for bad in [
        "",
        "redb:",
        "objects:",
        "postgres://x",
        "mem",
        "etcd://h:1?plog=objects:",
        "etcd://h:1?plog=redb:/d",
    ] {
        assert!(
            matches!(bad.parse::<StoreUrl>(), Err(OpenError::UnknownUrl(_))),
            "{bad:?} refused"
        );
    }
    let relative = "etcd://h:1?plog=objects:plog".parse::<StoreUrl>();
    assert!(
        matches!(&relative, Err(OpenError::Unsupported { what, .. }) if what.contains("absolute")),
        "a relative PLog directory refused: {relative:?}"
    );
}

#[test]
fn a_new_redb_store_records_the_layout_and_refuses_another_without_writing() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("data");
    let url = StoreUrl::Redb(None);
    {
        let opened = store::open(&url, &options(&dir, 4)).expect("open a new store");
        assert!(opened.created());
        assert_eq!(opened.layout(), Some(&layout(4)));
    }
    let before = common::snapshot(&dir);
    let refused = store::open(&url, &options(&dir, 2)).err().expect("refused");
    match &refused {
        OpenError::Layout {
            refusal: LayoutRefusal::Partitions { recorded, wanted },
            backend,
            ..
        } => assert_eq!((*recorded, *wanted, *backend), (4, 2, "redb")),
        other => panic!("not a layout refusal: {other}"),
    }
    assert!(common::snapshot(&dir) == before, "nothing written");
    let renumbered = Layout::from_params(4, &Params::new().with_seq(1, 1, 100)).expect("layout");
    assert!(matches!(
        store::open(&url, &OpenOptions::new().data(&dir).layout(renumbered)),
        Err(OpenError::Layout {
            refusal: LayoutRefusal::Sequences { .. },
            ..
        })
    ));
    // The same layout, renamed, reopens: names number nothing.
    let renamed = layout(4).named(1, "rec");
    let again = store::open(&url, &OpenOptions::new().data(&dir).layout(renamed)).expect("reopen");
    assert!(!again.created());
    // Without a layout the store's own stands, and a reader sees it.
    drop(again);
    let reader = store::open_reader(&url, &OpenOptions::new().data(&dir)).expect("reader");
    assert_eq!(reader.layout().expect("read"), Some(layout(4)));
}

#[test]
fn a_store_without_a_recorded_layout_is_refused_when_it_holds_a_partition_past_the_count() {
    assert_eq!(
        settle(None, &layout(2), &[0, 1, 2]),
        Err(LayoutRefusal::HoldsPartition {
            partition: 2,
            wanted: 2
        })
    );
    // Through a real store: a redb store whose LAYOUT file is gone (made before layouts).
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("data");
    let url = StoreUrl::Redb(None);
    {
        let opened = store::open(&url, &options(&dir, 4)).expect("open");
        let storage = opened.storage();
        storage
            .append(3, 1, &[SeqValue::new(4, 1, 1)])
            .expect("append to partition 3");
    }
    std::fs::remove_file(dir.join("LAYOUT")).expect("forget the layout");
    assert!(matches!(
        store::open(&url, &options(&dir, 3)),
        Err(OpenError::Layout {
            refusal: LayoutRefusal::HoldsPartition { partition: 3, .. },
            ..
        })
    ));
    let opened = store::open(&url, &options(&dir, 4)).expect("its own count is recorded again");
    assert_eq!(opened.layout(), Some(&layout(4)));
}

#[test]
fn an_archive_asked_of_a_store_that_is_not_archived_is_refused() {
    let asked = OpenOptions::new().archive(store::ArchiveUse::default().named("/tmp/a"));
    assert!(matches!(
        store::open(&StoreUrl::Memory, &asked),
        Err(OpenError::Unsupported { .. })
    ));
    assert!(matches!(
        store::open_reader(&StoreUrl::Memory, &OpenOptions::new()),
        Err(OpenError::Unsupported { .. })
    ));
}

#[test]
fn the_cross_partition_check_finds_a_workspace_numbered_in_two_partitions() {
    let storage = MemoryStorage::new();
    // Workspace 5 numbered in partition 0 (where a 4-partition layout puts it) and again in 1.
    storage.seed_event(0, 1, &[SeqValue::new(5, 1, 1)]);
    storage.seed_event(1, 1, &[SeqValue::new(5, 1, 1)]);
    let initial = |_| Some(1);
    let e = check_store(&storage, None, initial, |_, _| {}).expect_err("issued twice");
    assert!(
        matches!(e, CheckError::InTwoPartitions { ws: 5, seq: 1, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("issued twice"), "{e}");
    // With the layout recorded, the second partition is the wrong place for it.
    let e = check_store(&storage, Some(&layout(4)), initial, |_, _| {}).expect_err("misplaced");
    assert!(
        matches!(
            e,
            CheckError::Misplaced {
                partition: 1,
                ws: 5,
                expected: 0
            }
        ),
        "{e}"
    );
    // One partition alone is consistent.
    let alone = MemoryStorage::new();
    alone.seed_event(0, 1, &[SeqValue::new(5, 1, 1)]);
    let checked = check_store(&alone, Some(&layout(4)), initial, |_, _| {}).expect("ok");
    assert_eq!((checked.partitions, checked.events), (1, 1));
    assert_eq!(alone.partitions().expect("partitions"), [0]);
}
