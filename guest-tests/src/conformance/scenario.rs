//! The scenario format (`guest-tests/conformance/README.md`), read with serde: a file is a
//! [`Scenario`]; each step is a [`Step`] whose one action key says what it does. Unknown keys
//! are refused, so a new kind of step must be taught to the runners before a scenario uses it.

use serde::Deserialize;
use serde_json::Value;

/// One value: workspace, sequence, number.
pub type Row = (u64, u16, u64);

/// A scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Free text for readers.
    #[serde(default)]
    pub description: String,
    /// Free text for readers.
    #[serde(default)]
    pub covers: Vec<String>,
    /// The params of every `create` that brings none.
    #[serde(default)]
    pub params: ParamsJson,
    /// What storage holds before the first step.
    #[serde(default)]
    pub storage: StorageJson,
    /// How many PLog events one read returns at most.
    #[serde(default = "default_page_events")]
    pub page_events: usize,
    /// The steps, in order (kept as JSON: a `repeat` substitutes `$i` into them first).
    pub steps: Vec<Value>,
}

fn default_page_events() -> usize {
    100
}

/// A sequencer's params in the scenario form (durations in whole milliseconds).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamsJson {
    /// `[kind, [[seq, initial], ...]]`.
    #[serde(default)]
    pub kinds: Vec<(u16, Vec<(u16, u64)>)>,
    /// Pass the params through `system-params` before `create`.
    #[serde(default)]
    pub system: bool,
    /// Default 500.
    #[serde(default = "d500")]
    pub max_unflushed_values: u32,
    /// Default 100,000.
    #[serde(default = "d100k")]
    pub lru_cache_size: u32,
    /// Default 5.
    #[serde(default = "d5")]
    pub batcher_delay_ms: u64,
    /// Default 500.
    #[serde(default = "d500_64")]
    pub retry_delay_ms: u64,
    /// Default 500.
    #[serde(default = "d500_64")]
    pub max_retry_delay_ms: u64,
    /// Default 0.
    #[serde(default)]
    pub retry_jitter_percent: u8,
}

impl Default for ParamsJson {
    fn default() -> Self {
        Self {
            kinds: Vec::new(),
            system: false,
            max_unflushed_values: d500(),
            lru_cache_size: d100k(),
            batcher_delay_ms: d5(),
            retry_delay_ms: d500_64(),
            max_retry_delay_ms: d500_64(),
            retry_jitter_percent: 0,
        }
    }
}

fn d500() -> u32 {
    500
}
fn d100k() -> u32 {
    100_000
}
fn d5() -> u64 {
    5
}
fn d500_64() -> u64 {
    500
}

/// What storage holds before the first step.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageJson {
    /// Events `[offset, [[ws, seq, value], ...]]`.
    #[serde(default)]
    pub plog: Vec<(u64, Vec<Row>)>,
    /// Platform events, added as their sequence values.
    #[serde(default)]
    pub plog_events: Vec<PlatformEventJson>,
    /// The sequences view, rows `[ws, seq, last]`.
    #[serde(default)]
    pub view: Vec<Row>,
    /// The stored next PLog offset.
    #[serde(default)]
    pub next_offset: u64,
}

/// A platform event (as the PLog holds it, docs/DESIGN.md §5.4), for the facade's scenarios.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformEventJson {
    /// Its PLog offset.
    pub offset: u64,
    /// The workspace.
    pub ws: u64,
    /// Its WLog offset.
    pub wlog: u64,
    /// `[kind, id]` of the records it creates.
    #[serde(default)]
    pub records: Vec<(String, u64)>,
    /// The argument object, if any.
    #[serde(default)]
    pub argument: Option<ArgJson>,
}

/// An argument object with its children.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgJson {
    /// Its id.
    pub id: u64,
    /// Its children.
    #[serde(default)]
    pub children: Vec<ArgJson>,
}

/// One step (after `$i` substitution). Exactly one action key is set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// A call on the sequencer, by name.
    pub call: Option<String>,
    /// Call arguments.
    pub kind: Option<u16>,
    /// Call arguments.
    pub ws: Option<u64>,
    /// Call arguments.
    pub seq: Option<u16>,
    /// Call arguments.
    pub seqs: Option<Vec<u16>>,
    /// `deliver`'s operation id.
    pub op: Option<u64>,
    /// `deliver`'s outcome.
    pub outcome: Option<OutcomeJson>,
    /// `create`'s or `system_params`' params.
    pub params: Option<ParamsJson>,
    /// The call's result must equal this.
    pub expect: Option<Value>,
    /// The call must be refused with this WIT error case.
    pub expect_error: Option<String>,
    /// `"tasks"`: perform queued operations.
    pub run: Option<String>,
    /// Perform at most this many.
    pub max: Option<u64>,
    /// Exactly this many must be performed.
    pub expect_performed: Option<u64>,
    /// Move the clock.
    pub advance_ms: Option<u64>,
    /// Hold writes (or stop holding them).
    pub hold_writes: Option<bool>,
    /// Set fault counters.
    pub fault: Option<FaultsJson>,
    /// Append an event to the PLog.
    pub append: Option<(u64, Vec<Row>)>,
    /// Append a platform event to the PLog.
    pub append_event: Option<PlatformEventJson>,
    /// Check storage.
    pub expect_storage: Option<StorageExpect>,
    /// Check the queued operations.
    pub expect_pending: Option<Vec<PendingExpect>>,
    /// Check the wake-up (`null`: none). Kept as JSON; `Some(Null)` when given as `null`.
    #[serde(default, deserialize_with = "present")]
    pub expect_wake_ms: Option<Value>,
    /// Check the wake-up is within `[lo, hi]` ms.
    pub expect_wake_within_ms: Option<(f64, f64)>,
    /// Run `steps` this many times.
    pub repeat: Option<u64>,
    /// The repeated steps.
    pub steps: Option<Vec<Value>>,
    /// Free text for readers (`note`).
    #[serde(default, rename = "note")]
    _note: serde::de::IgnoredAny,
}

/// A key that is present, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// `deliver`'s outcome: `"written"`, `{"next_offset": n}`, `{"plog_page": ...}` or
/// `{"failed": "message"}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum OutcomeJson {
    /// The write is durable.
    Written,
    /// The stored next offset.
    NextOffset(u64),
    /// A page of the PLog.
    PlogPage(PageJson),
    /// The operation failed.
    Failed(String),
}

/// A PLog page.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageJson {
    /// `[offset, ws, seq, value]`.
    #[serde(default)]
    pub values: Vec<(u64, u64, u16, u64)>,
    /// The offset after the page.
    pub next: u64,
    /// No event at or after `next`.
    #[serde(default)]
    pub end: bool,
}

/// Fault counters.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultsJson {
    /// Writes to fail.
    pub fail_writes: Option<u32>,
    /// Offset and PLog reads to fail.
    pub fail_reads: Option<u32>,
    /// Numbers reads to fail.
    pub fail_number_reads: Option<u32>,
}

/// Storage checks; only the keys given are checked.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageExpect {
    /// The whole view, any order.
    pub view: Option<Vec<Row>>,
    /// The stored next offset.
    pub next_offset: Option<u64>,
    /// Writes applied.
    pub writes: Option<u64>,
    /// The PLog's next offset.
    pub plog_next: Option<u64>,
    /// Every event below the stored offset has its numbers in the view.
    pub consistent: Option<bool>,
}

/// One queued operation as a check names it; only `kind` is required.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingExpect {
    /// `write`, `read-next-offset` or `read-plog`.
    pub kind: String,
    /// The operation id.
    pub op: Option<u64>,
    /// A write's values, any order.
    pub values: Option<Vec<Row>>,
    /// A write's next offset.
    pub next_offset: Option<u64>,
    /// A PLog read's first offset.
    pub first: Option<u64>,
}

/// `value` with `"$i"`, `"$i+K"`, `"$i-K"` replaced by the iteration number `i` (plus or
/// minus K) anywhere in it.
pub fn subst(value: &Value, i: u64) -> Value {
    match value {
        Value::String(s) => match s.strip_prefix("$i") {
            Some("") => Value::from(i),
            Some(k) if k.starts_with(['+', '-']) => match k.parse::<i64>() {
                Ok(k) => Value::from(i.checked_add_signed(k).unwrap_or(0)),
                Err(_) => value.clone(),
            },
            _ => value.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(|x| subst(x, i)).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), subst(x, i))).collect())
        }
        _ => value.clone(),
    }
}

/// The storage adapter's half of the facade: a platform event's offset and sequence values,
/// by the core's rule (`sequencer::facade::event_values`).
pub fn event_values(e: &PlatformEventJson) -> Result<(u64, Vec<Row>), String> {
    use sequencer::facade::{ArgObject, PlatformEvent, RecordKind};
    fn arg(a: &ArgJson) -> ArgObject {
        ArgObject {
            id: a.id,
            children: a.children.iter().map(arg).collect(),
        }
    }
    let new_records = e
        .records
        .iter()
        .map(|(kind, id)| {
            RecordKind::parse(kind)
                .map(|k| (k, *id))
                .ok_or_else(|| format!("unknown record kind {kind:?}"))
        })
        .collect::<Result<_, _>>()?;
    let event = PlatformEvent {
        ws: e.ws,
        wlog_offset: e.wlog,
        new_records,
        argument: e.argument.as_ref().map(arg),
    };
    let values = sequencer::facade::event_values(&event)
        .iter()
        .map(|v| (v.key.ws, v.key.seq, v.value))
        .collect();
    Ok((e.offset, values))
}
