//! Placement: rendezvous (highest random weight) hashing of (partition, host), bounded so that
//! no host gets more than its even share. Every host computes the same placement from the
//! same set of live hosts.

use crate::store::storage::PartitionId;

/// splitmix64's finalizer.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The weight of `host` for `partition`: the host's name hashed (FNV-1a, mixed), mixed with
/// the partition's. The largest weight wins.
pub fn placement_weight(partition: PartitionId, host: &str) -> u64 {
    let name = host.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    mix(mix(name) ^ mix(u64::from(partition)))
}

/// The preferred owner of each partition `0..partitions` among `hosts`: partition by
/// partition, the host of largest weight that has fewer than its even share
/// (⌈partitions / hosts⌉). Empty names or no host: `None` for every partition.
pub fn placement<'a>(partitions: PartitionId, hosts: &[&'a str]) -> Vec<Option<&'a str>> {
    let mut hosts: Vec<&str> = hosts.to_vec();
    hosts.sort_unstable();
    hosts.dedup();
    if hosts.is_empty() {
        return vec![None; partitions as usize];
    }
    let share = (partitions as usize).div_ceil(hosts.len());
    let mut load = vec![0usize; hosts.len()];
    (0..partitions)
        .map(|p| {
            let (i, _) = (hosts.iter().enumerate())
                .filter(|(i, _)| load[*i] < share)
                .max_by_key(|(_, h)| (placement_weight(p, h), std::cmp::Reverse(**h)))?;
            load[i] += 1;
            Some(hosts[i])
        })
        .collect()
}

/// The preferred owner of `partition` (one of `0..partitions`) among `hosts`.
pub fn preferred_host<'a>(
    partition: PartitionId,
    partitions: PartitionId,
    hosts: &[&'a str],
) -> Option<&'a str> {
    placement(partitions.max(partition + 1), hosts)
        .get(partition as usize)
        .copied()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_computes_the_same_placement_whatever_the_order_it_lists_hosts_in() {
        assert_eq!(
            placement(64, &["h1", "h2", "h3"]),
            placement(64, &["h3", "h1", "h2"])
        );
    }

    #[test]
    fn no_host_gets_more_than_its_even_share() {
        for (n, hosts) in [
            (6, vec!["a", "b", "c"]),
            (4, vec!["a", "b"]),
            (8, vec!["x", "y", "z"]),
        ] {
            let placed = placement(n, &hosts);
            for h in &hosts {
                let got = placed.iter().filter(|o| **o == Some(*h)).count();
                assert!(
                    got <= (n as usize).div_ceil(hosts.len()),
                    "{h}: {got} of {n}"
                );
                assert!(got >= 1, "{h} got nothing of {placed:?}");
            }
        }
    }

    #[test]
    fn a_leaving_host_moves_few_partitions_of_the_others() {
        let three = placement(300, &["host-a", "host-b", "host-c"]);
        let two = placement(300, &["host-a", "host-b"]);
        let moved = (three.iter().zip(&two))
            .filter(|(t, w)| **t != Some("host-c") && t != w)
            .count();
        assert!(moved < 60, "{moved} of the staying hosts' partitions moved");
    }

    #[test]
    fn no_host_means_no_owner() {
        assert_eq!(placement(2, &[]), vec![None, None]);
        assert_eq!(preferred_host(0, 1, &[]), None);
    }
}
