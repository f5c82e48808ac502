//! The checksum every PLog event carries, on etcd: a bit flipped in a stored value (a pack of
//! an append's events) is listed by `check` and refused by a replay.

use etcd_client::{GetOptions, SortOrder, SortTarget};

use crate::common::etcd_cluster::EtcdCluster;
use crate::common::{component_path, run_host, text};
use crate::support::run_args;

#[test]
fn a_flipped_bit_in_an_etcd_value_is_listed_by_check_and_refused_by_a_replay() {
    let Some(cluster) = EtcdCluster::start() else {
        return;
    };
    let url = cluster.url();
    let component = component_path();
    let args = run_args(&url, &component, "2", "200");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_host(&args);
    assert!(out.status.success(), "{:?}", text(&out));

    // Partition 1's last key holds its last append; the value's last byte is the payload of
    // its last event, at the key's offset (where a replay starts).
    let (rt, mut client) = cluster.client();
    let last = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Key, SortOrder::Descend)
        .with_limit(1);
    let resp = rt
        .block_on(client.get("plog/1/", Some(last)))
        .expect("read the last key");
    let kv = resp.kvs().first().expect("a PLog key");
    let key = String::from_utf8_lossy(kv.key()).into_owned();
    let offset: u64 = key
        .rsplit('/')
        .next()
        .and_then(|o| o.parse().ok())
        .expect("offset");
    let mut value = kv.value().to_vec();
    let n = value.len();
    value[n - 1] ^= 0x10;
    rt.block_on(client.put(key, value, None)).expect("put");

    let out = run_host(&["check", "--store", &url]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(&format!("partition 1 offset {offset}")),
        "{stderr}"
    );
    assert!(
        stdout.contains(&format!(
            "partition 1: 1 event fails its checksum (damaged, never replayed): offset {offset}"
        )),
        "{stdout}"
    );

    let args = run_args(&url, &component, "2", "10");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_host(&args);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("etcd http://")
            && stderr.contains(&format!(
                "partition 1: event at offset {offset} fails its checksum"
            )),
        "{stderr}"
    );
}
