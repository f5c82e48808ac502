//! `status`: the hosts of a deployment on an etcd cluster, their leases, and each partition's
//! owner and epoch (what `run --host-name` hosts record in the cluster).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use sequencer_host::store::StoreUrl;
use sequencer_host::store::etcd::EtcdStorage;
use sequencer_host::store::etcd::ownership::preferred_host;

use super::common::{CliError, CliResult, StoreArg};

/// Options of `status`.
#[derive(Args, Debug, Clone)]
pub struct StatusArgs {
    /// The etcd cluster, etcd://HOST:PORT,...
    #[arg(long)]
    pub store: StoreArg,
}

/// `status`: one line per live host (its lease and the seconds it has left), one per owned
/// partition (its owner, epoch and lease), and the partitions of the recorded layout that no
/// host owns.
pub fn status(args: &StatusArgs) -> CliResult<ExitCode> {
    let (StoreUrl::Etcd(address) | StoreUrl::EtcdObjects { etcd: address, .. }) = &args.store.0
    else {
        return Err(CliError(format!(
            "--store {}: hosts and owners are kept on an etcd cluster only (--store etcd://HOST:PORT,...)",
            args.store
        )));
    };
    let store = EtcdStorage::connect_url(address)?;
    let owners = store.owners(Duration::from_secs(5))?;
    println!(
        "{}: {} hosts, {} partitions owned (revision {})",
        store.label(),
        owners.hosts.len(),
        owners.owners.len(),
        owners.revision
    );
    for (name, lease) in &owners.hosts {
        let left = match store.lease_time_to_live(*lease)? {
            Some(s) => format!("{s} s left"),
            None => "expired".into(),
        };
        let owned: Vec<String> = (owners.owners.iter())
            .filter(|(_, o)| o.host == *name)
            .map(|(p, _)| p.to_string())
            .collect();
        println!(
            "host {name}: lease {lease:x} ({left}), owns [{}]",
            owned.join(", ")
        );
    }
    let live: Vec<&str> = owners.hosts.keys().map(String::as_str).collect();
    let layout = store.read_layout()?;
    let partitions = layout.as_ref().map_or(0, |l| l.partitions);
    for (p, o) in &owners.owners {
        let preferred = preferred_host(*p, partitions, &live).unwrap_or("none");
        println!(
            "partition {p}: owner {} epoch {} lease {:x} (placement prefers {preferred})",
            o.host, o.epoch, o.lease
        );
    }
    if let Some(layout) = layout {
        let free: Vec<String> = (0..layout.partitions)
            .filter(|p| !owners.owners.contains_key(p))
            .map(|p| p.to_string())
            .collect();
        if !free.is_empty() {
            println!("no owner: partitions {}", free.join(", "));
        }
    }
    Ok(ExitCode::SUCCESS)
}
