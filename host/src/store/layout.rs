//! What a store's numbering depends on, recorded with the store so that a resumed run cannot
//! change it: the partition count and the rule that maps a workspace to its partition, the
//! workspace kind and its sequences with their initial values, and the format of this record.
//!
//! Why it matters: a workspace's numbers live in its partition's PLog and view. A run resumed
//! with another partition count would send a workspace to a partition that has never seen it,
//! whose view has no row for it, and its numbers would start again from the initial value:
//! issued a second time. A run compares its own layout with the recorded one and refuses any
//! difference before it writes anything; `check` takes the initial values and the partition
//! of each workspace from the record, not from the program that reads it.
//!
//! The record is a small text file (`LAYOUT` in the embedded store's data directory):
//!
//! ```text
//! sequencer-layout 1
//! partitions 8
//! workspace-to-partition (workspace - 1) mod partitions
//! kind 1
//! sequence 1 wlog-offset 1
//! sequence 2 rec-id 1000000
//! sequence 3 crec-id 1
//! ```

use std::fmt::Write as _;

use sequencer::{Number, Params, SeqId, WsId, WsKind};

use crate::store::storage::PartitionId;

/// The version of the record's text this build reads and writes.
pub const LAYOUT_VERSION: u32 = 1;

/// The one workspace-to-partition rule there is, as the record names it.
pub const WORKSPACE_TO_PARTITION: &str = "(workspace - 1) mod partitions";

const HEADER: &str = "sequencer-layout";

/// One sequence of the layout's kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutSeq {
    /// Its id.
    pub id: SeqId,
    /// Its name (one word).
    pub name: String,
    /// The first number it hands out.
    pub initial: Number,
}

/// What numbering depends on. Two runs that agree on it number every workspace alike.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// How many partitions share the workspaces ([`WORKSPACE_TO_PARTITION`]).
    pub partitions: u32,
    /// The workspace kind of every workspace.
    pub kind: WsKind,
    /// The kind's sequences, in id order.
    pub sequences: Vec<LayoutSeq>,
}

impl Layout {
    /// The partition that holds workspace `ws` (workspaces are numbered from 1).
    pub fn partition_of(&self, ws: WsId) -> PartitionId {
        // partitions >= 1 (parse and the CLI refuse 0); the result is below it, so it fits.
        (ws.saturating_sub(1) % u64::from(self.partitions.max(1))) as PartitionId
    }

    /// The first number sequence `seq` hands out, if the layout has it.
    pub fn initial(&self, seq: SeqId) -> Option<Number> {
        self.sequences
            .iter()
            .find(|s| s.id == seq)
            .map(|s| s.initial)
    }

    /// The record's text (see the module documentation).
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{HEADER} {LAYOUT_VERSION}\npartitions {}\nworkspace-to-partition {WORKSPACE_TO_PARTITION}\nkind {}\n",
            self.partitions, self.kind
        );
        for s in &self.sequences {
            let _ = writeln!(out, "sequence {} {} {}", s.id, s.name, s.initial);
        }
        out
    }

    /// Reads a record's text; the error says which line is wrong and how.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
        let (_, header) = lines.next().ok_or("it is empty")?;
        match header.split_once(' ') {
            Some((HEADER, v)) if v.parse() == Ok(LAYOUT_VERSION) => {}
            Some((HEADER, v)) => {
                return Err(format!(
                    "layout version {v} is not supported (this build reads {LAYOUT_VERSION})"
                ));
            }
            _ => return Err(format!("line 1 is not \"{HEADER} {LAYOUT_VERSION}\"")),
        }
        let (mut partitions, mut rule, mut kind) = (None, None, None);
        let mut sequences: Vec<LayoutSeq> = Vec::new();
        for (n, line) in lines.filter(|(_, l)| !l.is_empty()) {
            let bad = |what: &str| format!("line {n} ({line:?}): {what}");
            let (key, rest) = line.split_once(' ').ok_or_else(|| bad("no value"))?;
            match key {
                "partitions" => {
                    let p: u32 = rest.parse().map_err(|_| bad("not a count"))?;
                    if p == 0 {
                        return Err(bad("zero partitions"));
                    }
                    partitions = Some(p);
                }
                "workspace-to-partition" if rest == WORKSPACE_TO_PARTITION => rule = Some(()),
                "workspace-to-partition" => return Err(bad("a rule this build does not know")),
                "kind" => kind = Some(rest.parse().map_err(|_| bad("not a workspace kind"))?),
                "sequence" => {
                    let mut words = rest.split_whitespace();
                    let (Some(id), Some(name), Some(initial), None) =
                        (words.next(), words.next(), words.next(), words.next())
                    else {
                        return Err(bad("not \"sequence ID NAME INITIAL\""));
                    };
                    let id: SeqId = id.parse().map_err(|_| bad("not a sequence id"))?;
                    if sequences.iter().any(|s| s.id == id) {
                        return Err(bad("a second line for this sequence"));
                    }
                    sequences.push(LayoutSeq {
                        id,
                        name: name.to_string(),
                        initial: initial.parse().map_err(|_| bad("not a number"))?,
                    });
                }
                _ => return Err(bad("an unknown entry")),
            }
        }
        let missing = |what: &str| format!("it has no {what} line");
        rule.ok_or_else(|| missing("workspace-to-partition"))?;
        if sequences.is_empty() {
            return Err(missing("sequence"));
        }
        sequences.sort_by_key(|s| s.id);
        Ok(Self {
            partitions: partitions.ok_or_else(|| missing("partitions"))?,
            kind: kind.ok_or_else(|| missing("kind"))?,
            sequences,
        })
    }

    /// The layout of `params` over `partitions` partitions, for an embedder opening a store
    /// (`store::OpenOptions::layout`): the kind and its sequences with their initial values,
    /// each named `seq-ID` until [`named`](Self::named) names it. Params of no kind or of
    /// several kinds have no layout (a layout records one kind).
    pub fn from_params(partitions: u32, params: &Params) -> Result<Self, String> {
        if partitions == 0 {
            return Err("a layout has at least one partition".into());
        }
        let mut kinds = params.contract_kinds();
        let (kind, seqs) = match (kinds.pop(), kinds.is_empty()) {
            (Some(k), true) => k,
            (None, _) => return Err("the params declare no sequence".into()),
            (Some(_), false) => {
                return Err(format!(
                    "the params declare {} workspace kinds; a layout records one",
                    kinds.len() + 1
                ));
            }
        };
        let mut sequences: Vec<LayoutSeq> = (seqs.into_iter())
            .map(|(id, initial)| LayoutSeq {
                id,
                name: format!("seq-{id}"),
                initial,
            })
            .collect();
        sequences.sort_by_key(|s| s.id);
        Ok(Self {
            partitions,
            kind,
            sequences,
        })
    }

    /// This layout with sequence `id` named `name` (one word; names are labels that `inspect`
    /// shows, they number nothing).
    pub fn named(mut self, id: SeqId, name: &str) -> Self {
        if let Some(s) = self.sequences.iter_mut().find(|s| s.id == id) {
            s.name = name.split_whitespace().collect::<Vec<_>>().join("-");
        }
        self
    }

    /// The name of sequence `id` in this layout, if it has it.
    pub fn name(&self, id: SeqId) -> Option<&str> {
        (self.sequences.iter())
            .find(|s| s.id == id)
            .map(|s| s.name.as_str())
    }

    /// How `wanted` differs from this recorded layout in a way that would number a workspace
    /// differently; `None` if it does not (names are labels: they number nothing).
    pub fn refusal(&self, wanted: &Layout) -> Option<LayoutRefusal> {
        if self.partitions != wanted.partitions {
            return Some(LayoutRefusal::Partitions {
                recorded: self.partitions,
                wanted: wanted.partitions,
            });
        }
        let numbering = |l: &Layout| -> Vec<(SeqId, Number)> {
            l.sequences.iter().map(|s| (s.id, s.initial)).collect()
        };
        if self.kind != wanted.kind || numbering(self) != numbering(wanted) {
            let list = |l: &Layout| {
                let seqs: Vec<String> = (l.sequences.iter())
                    .map(|s| format!("{} {}={}", s.id, s.name, s.initial))
                    .collect();
                format!("kind {} [{}]", l.kind, seqs.join(", "))
            };
            return Some(LayoutRefusal::Sequences {
                recorded: list(self),
                wanted: list(wanted),
            });
        }
        None
    }

    /// [`refusal`](Self::refusal) in words.
    pub fn difference(&self, wanted: &Layout) -> Option<String> {
        self.refusal(wanted).map(|r| r.to_string())
    }
}

/// Why a store refuses to be numbered by a layout: numbering it so would move a workspace to a
/// partition that does not hold its numbers, or start a sequence again.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutRefusal {
    /// The store records another partition count.
    #[error(
        "it was numbered with {recorded} partitions, not {wanted}: workspaces would move to partitions that do not hold their numbers"
    )]
    Partitions {
        /// The recorded count.
        recorded: u32,
        /// The count asked for.
        wanted: u32,
    },
    /// The store records another kind, other sequence ids or other initial values.
    #[error("it was numbered with the sequences {recorded}, not {wanted}")]
    Sequences {
        /// The recorded kind and sequences, in words.
        recorded: String,
        /// The ones asked for, in words.
        wanted: String,
    },
    /// A store with no recorded layout (made before layouts were recorded) holds the PLog of a
    /// partition the layout asked for does not have.
    #[error(
        "it holds partition {partition}'s PLog, so it was numbered with more than {wanted} partitions: workspaces would move to partitions that do not hold their numbers"
    )]
    HoldsPartition {
        /// The partition found.
        partition: PartitionId,
        /// The partition count asked for.
        wanted: u32,
    },
}

/// What an open must do about the layout record, once [`settle`] allowed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The store records the layout asked for: nothing to write.
    Recorded,
    /// The store records none (new, or made before layouts were recorded): record it.
    Record,
}

/// **The layout rule**, the one place it is written: a store that records a layout is numbered
/// only by that layout (any difference is refused before anything is written); a store that
/// records none may take `wanted` unless it holds the PLog of a partition `wanted` does not
/// have (`held`: the store's partitions; a larger count cannot be told from the store).
pub fn settle(
    recorded: Option<&Layout>, wanted: &Layout, held: &[PartitionId],
) -> Result<Settled, LayoutRefusal> {
    match recorded {
        Some(r) => r.refusal(wanted).map_or(Ok(Settled::Recorded), Err),
        None => match held.iter().find(|&&p| p >= wanted.partitions) {
            Some(&partition) => Err(LayoutRefusal::HoldsPartition {
                partition,
                wanted: wanted.partitions,
            }),
            None => Ok(Settled::Record),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(partitions: u32) -> Layout {
        Layout {
            partitions,
            kind: 1,
            sequences: vec![
                LayoutSeq {
                    id: 1,
                    name: "wlog-offset".into(),
                    initial: 1,
                },
                LayoutSeq {
                    id: 2,
                    name: "rec-id".into(),
                    initial: 1_000_000,
                },
            ],
        }
    }

    #[test]
    fn a_layout_reads_back_what_it_wrote() {
        let l = layout(8);
        assert_eq!(Layout::parse(&l.to_text()), Ok(l));
    }

    #[test]
    fn a_workspace_goes_to_workspace_minus_one_mod_partitions() {
        let l = layout(4);
        assert_eq!(
            [1, 2, 4, 5, 8, 9].map(|ws| l.partition_of(ws)),
            [0, 1, 3, 0, 3, 0]
        );
    }

    #[test]
    fn another_partition_count_or_initial_value_is_a_difference_and_the_same_or_a_rename_is_none() {
        let l = layout(8);
        assert_eq!(l.difference(&layout(8)), None);
        let moved = l.difference(&layout(4)).expect("a difference");
        assert!(moved.contains("8 partitions, not 4"), "{moved}");
        let mut other = layout(8);
        other.sequences[1].initial = 1;
        let renumbered = l.difference(&other).expect("a difference");
        assert!(renumbered.contains("2 rec-id=1000000"), "{renumbered}");
        let mut renamed = layout(8);
        renamed.sequences[1].name = "record-id".into();
        assert_eq!(l.difference(&renamed), None, "a name numbers nothing");
    }

    #[test]
    fn a_damaged_record_is_refused_with_its_line() {
        for (text, says) in [
            ("", "empty"),
            ("something else\n", "line 1"),
            ("sequencer-layout 9\n", "version 9"),
            ("sequencer-layout 1\npartitions 0\n", "zero partitions"),
            ("sequencer-layout 1\npartitions x\n", "line 2"),
            (
                "sequencer-layout 1\npartitions 2\nworkspace-to-partition ws mod 7\n",
                "rule",
            ),
            (
                "sequencer-layout 1\npartitions 2\nworkspace-to-partition (workspace - 1) mod partitions\nkind 1\n",
                "no sequence line",
            ),
            (
                "sequencer-layout 1\npartitions 2\nworkspace-to-partition (workspace - 1) mod partitions\nkind 1\nsequence 1 a 1\nsequence 1 b 2\n",
                "second line",
            ),
            ("sequencer-layout 1\ncolour blue\n", "unknown entry"),
        ] {
            let e = Layout::parse(text).expect_err(text);
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn the_rule_refuses_any_difference_and_a_legacy_store_holding_a_partition_past_the_count() {
        let l = layout(4);
        assert_eq!(settle(Some(&l), &layout(4), &[0, 9]), Ok(Settled::Recorded));
        assert_eq!(
            settle(Some(&l), &layout(2), &[]),
            Err(LayoutRefusal::Partitions {
                recorded: 4,
                wanted: 2
            })
        );
        assert_eq!(settle(None, &layout(4), &[0, 3]), Ok(Settled::Record));
        assert_eq!(
            settle(None, &layout(3), &[0, 3]),
            Err(LayoutRefusal::HoldsPartition {
                partition: 3,
                wanted: 3
            })
        );
    }

    #[test]
    fn a_layout_from_params_takes_its_one_kind_and_refuses_several() {
        let params = Params::new().with_seq(7, 2, 100).with_seq(7, 1, 1);
        let l = Layout::from_params(3, &params)
            .expect("one kind")
            .named(2, "rec id");
        assert_eq!((l.partitions, l.kind), (3, 7));
        assert_eq!(l.initial(2), Some(100));
        assert_eq!(l.name(2), Some("rec-id"));
        assert_eq!(l.name(1), Some("seq-1"));
        assert!(Layout::from_params(3, &params.with_seq(8, 1, 1)).is_err());
        assert!(Layout::from_params(0, &Params::new().with_seq(1, 1, 1)).is_err());
    }
}
