//! Placement: rendezvous (highest random weight) hashing of (partition, host), bounded so that
//! no host gets more than its even share, and sticky: a live owner keeps what it owns up to its
//! share, so a host joining or leaving moves only the partitions that must move. Every host
//! computes the same placement from the same snapshot of live hosts and owners.

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

/// The preferred owner of each partition `0..partitions` among `hosts`, with nothing owned
/// yet: [`placement_keeping`] with no owners.
pub fn placement<'a>(partitions: PartitionId, hosts: &[&'a str]) -> Vec<Option<&'a str>> {
    placement_keeping(partitions, hosts, &[])
}

/// The preferred owner of each partition `0..partitions` among `hosts`, no host above its
/// even share (⌈partitions / hosts⌉), given the partitions' current owners (`owners[p]`, the
/// name of a live owner; missing or `None`: free).
///
/// First every owner among `hosts` keeps its partitions, up to its share (those of largest
/// weight for it first); then partition by partition, each of the rest goes to the host of
/// largest weight that has room. So a host that joins gets only partitions the others hold
/// beyond the new share, and a host that leaves moves only its own. Empty names or no host:
/// `None` for every partition.
pub fn placement_keeping<'a>(
    partitions: PartitionId, hosts: &[&'a str], owners: &[Option<&str>],
) -> Vec<Option<&'a str>> {
    let mut hosts: Vec<&str> = hosts.to_vec();
    hosts.sort_unstable();
    hosts.dedup();
    if hosts.is_empty() {
        return vec![None; partitions as usize];
    }
    let share = (partitions as usize).div_ceil(hosts.len());
    let mut load = vec![0usize; hosts.len()];
    let mut placed: Vec<Option<usize>> = vec![None; partitions as usize];
    // (weight, partition, host) of every owned partition whose owner is one of `hosts`.
    let mut kept: Vec<(u64, PartitionId, usize)> = (0..partitions)
        .filter_map(|p| {
            let owner = owners.get(p as usize).copied().flatten()?;
            let i = hosts.binary_search(&owner).ok()?;
            Some((placement_weight(p, hosts[i]), p, i))
        })
        .collect();
    kept.sort_unstable_by(|a, b| b.cmp(a));
    for (_, p, i) in kept {
        if load[i] < share {
            load[i] += 1;
            placed[p as usize] = Some(i);
        }
    }
    for p in 0..partitions {
        if placed[p as usize].is_some() {
            continue;
        }
        let best = (hosts.iter().enumerate())
            .filter(|(i, _)| load[*i] < share)
            .max_by_key(|(_, h)| (placement_weight(p, h), std::cmp::Reverse(**h)))
            .map(|(i, _)| i);
        if let Some(i) = best {
            load[i] += 1;
            placed[p as usize] = Some(i);
        }
    }
    placed.into_iter().map(|i| i.map(|i| hosts[i])).collect()
}

/// The preferred owner of `partition` (one of `0..partitions`) among `hosts`.
pub fn preferred_host<'a>(
    partition: PartitionId, partitions: PartitionId, hosts: &[&'a str],
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

    /// Partitions whose owner differs between two placements, not counting those of `host`
    /// (which joined or left).
    fn moved_between_others(a: &[Option<&str>], b: &[Option<&str>], host: &str) -> usize {
        (a.iter().zip(b))
            .filter(|(x, y)| x != y && **x != Some(host) && **y != Some(host))
            .count()
    }

    #[test]
    fn a_joining_host_takes_only_what_the_others_hold_beyond_the_new_share() {
        for (n, names) in [
            (6, ["h0", "h1", "h2"]),
            (8, ["a", "b", "c"]),
            (64, ["host-a", "host-b", "host-c"]),
        ] {
            for joined in names {
                let others: Vec<&str> = names.iter().copied().filter(|h| *h != joined).collect();
                let before = placement(n, &others);
                let after = placement_keeping(n, &names, &before);
                let share = (n as usize).div_ceil(names.len());
                let must: usize = (others.iter())
                    .map(|h| before.iter().filter(|o| **o == Some(*h)).count())
                    .map(|held| held.saturating_sub(share))
                    .sum();
                let moved = (before.iter().zip(&after)).filter(|(b, a)| b != a).count();
                assert_eq!(
                    moved, must,
                    "{joined} joins {others:?} with {n}: {before:?} -> {after:?}"
                );
                assert_eq!(moved_between_others(&before, &after, joined), 0);
                assert!(after.iter().all(Option::is_some));
            }
        }
    }

    #[test]
    fn a_leaving_host_moves_only_its_own_partitions() {
        let names = ["host-a", "host-b", "host-c", "host-d"];
        let before = placement(64, &names);
        for left in names {
            let rest: Vec<&str> = names.iter().copied().filter(|h| *h != left).collect();
            let owners: Vec<Option<&str>> =
                (before.iter()).map(|o| o.filter(|h| *h != left)).collect();
            let after = placement_keeping(64, &rest, &owners);
            assert_eq!(
                moved_between_others(&before, &after, left),
                0,
                "{left} left"
            );
            assert!(after.iter().all(|o| o.is_some() && *o != Some(left)));
        }
    }

    #[test]
    fn an_owner_above_its_share_keeps_the_partitions_of_largest_weight_for_it() {
        // One host owns all 6; a second arrives: the first keeps its 3 of largest weight.
        let owners = vec![Some("a"); 6];
        let placed = placement_keeping(6, &["a", "b"], &owners);
        let mut by_weight: Vec<PartitionId> = (0..6).collect();
        by_weight.sort_by_key(|p| std::cmp::Reverse(placement_weight(*p, "a")));
        for (rank, p) in by_weight.iter().enumerate() {
            let want = if rank < 3 { "a" } else { "b" };
            assert_eq!(placed[*p as usize], Some(want), "partition {p}");
        }
    }

    #[test]
    fn an_owner_that_is_not_a_live_host_is_placed_as_free() {
        let owners = vec![Some("gone"); 4];
        assert_eq!(
            placement_keeping(4, &["x", "y"], &owners),
            placement(4, &["x", "y"])
        );
    }

    #[test]
    fn no_host_means_no_owner() {
        assert_eq!(placement(2, &[]), vec![None, None]);
        assert_eq!(preferred_host(0, 1, &[]), None);
    }
}
