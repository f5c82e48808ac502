//! The Rust runner of the conformance suite (`guest-tests/conformance/`): every scenario through
//! the compiled component under wasmtime, with the host crate's generated bindings, and this
//! runner's own in-memory storage, task queue and manual clock (the format and the host model are
//! in `guest-tests/conformance/README.md`).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::OnceLock;

use sequencer_host::bindings::sequencer::plugin::types::{self as wit, KindSequences};
use sequencer_host::bindings::{
    EventStart, GuestError, GuestParams, GuestSeqValue, NotNowReason, Outcome, PlogPage, PlogValue,
    SequenceStatus, SequencerPlugin, StartOutcome, Status, clock, storage,
};
use serde_json::{Value, json};
use wasmtime::component::{Component, HasSelf, Linker, ResourceAny};
use wasmtime::{Engine, Store};

const RUNNER: &str = "rust";
const MS: u64 = 1_000_000;

/// One value: workspace, sequence, number.
type Row = (u64, u16, u64);

/// The scenario files, in name order.
pub fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Runs one scenario file; the error names the runner, the scenario and the step.
pub fn run_scenario(path: &Path) -> Result<(), String> {
    let name = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let scenario: Value =
        serde_json::from_str(&text).map_err(|e| format!("[{RUNNER}] scenario {name}: {e}"))?;
    let mut runner = Runner::new(name.clone(), scenario)
        .map_err(|e| format!("[{RUNNER}] scenario {name}, storage: {e}"))?;
    let steps = runner.scenario["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (i, step) in steps.iter().enumerate() {
        runner.step(step, &format!("steps[{i}]"))?;
    }
    Ok(())
}

fn compiled() -> &'static (Engine, Component) {
    static COMPILED: OnceLock<(Engine, Component)> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let engine = Engine::default();
        let path = crate::component_path();
        let component = Component::from_file(&engine, &path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}\n(build it first: bash scripts/build-component.sh)",
                path.display()
            )
        });
        (engine, component)
    })
}

#[derive(Clone, Debug)]
enum Op {
    Write(Vec<Row>, u64),
    ReadNextOffset,
    ReadPlog(u64),
}

impl Op {
    fn kind(&self) -> &'static str {
        match self {
            Op::Write(..) => "write",
            Op::ReadNextOffset => "read-next-offset",
            Op::ReadPlog(_) => "read-plog",
        }
    }
}

/// Storage, queue, clock and faults: what the imports and the host steps share.
#[derive(Default)]
struct World {
    plog: BTreeMap<u64, Vec<Row>>,
    view: HashMap<(u64, u16), u64>,
    next_offset: u64,
    writes: u64,
    page_events: usize,
    faults: BTreeMap<String, u64>,
    hold: bool,
    queue: Vec<(u64, Op)>,
    now: u64,
    wake: Option<u64>,
}

impl World {
    fn fault(&mut self, name: &str) -> bool {
        match self.faults.get_mut(name) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }
}

/// The store's data: the world, shared with the runner.
struct Data(Rc<RefCell<World>>);

impl storage::Host for Data {
    fn read_numbers(&mut self, ws: u64, seqs: Vec<u16>) -> Result<Vec<u64>, String> {
        let mut w = self.0.borrow_mut();
        if w.fault("fail_number_reads") {
            return Err("injected read-numbers failure".into());
        }
        Ok(seqs
            .iter()
            .map(|&s| w.view.get(&(ws, s)).copied().unwrap_or(0))
            .collect())
    }

    fn read_numbers_many(&mut self, ws: Vec<u64>, seqs: Vec<u16>) -> Result<Vec<u64>, String> {
        let mut w = self.0.borrow_mut();
        if w.fault("fail_number_reads") {
            return Err("injected read-numbers failure".into());
        }
        Ok(ws
            .iter()
            .flat_map(|&ws| seqs.iter().map(move |&s| (ws, s)))
            .map(|key| w.view.get(&key).copied().unwrap_or(0))
            .collect())
    }

    fn begin_read_next_offset(&mut self, op: u64) {
        self.0.borrow_mut().queue.push((op, Op::ReadNextOffset));
    }

    fn begin_write(&mut self, op: u64, values: Vec<GuestSeqValue>, next_plog_offset: u64) {
        let values = values.iter().map(|v| (v.ws, v.seq, v.value)).collect();
        self.0
            .borrow_mut()
            .queue
            .push((op, Op::Write(values, next_plog_offset)));
    }

    fn begin_read_plog(&mut self, op: u64, first: u64) {
        self.0.borrow_mut().queue.push((op, Op::ReadPlog(first)));
    }
}

impl clock::Host for Data {
    fn now(&mut self) -> u64 {
        self.0.borrow().now
    }

    fn set_wake(&mut self, at: Option<u64>) {
        self.0.borrow_mut().wake = at;
    }
}

impl wit::Host for Data {}

struct Instance {
    store: Store<Data>,
    plugin: SequencerPlugin,
    handle: ResourceAny,
}

/// A refusal: the WIT case name and its payload, for messages.
type Refusal = (String, String);

struct Runner {
    name: String,
    scenario: Value,
    world: Rc<RefCell<World>>,
    linker: Linker<Data>,
    instance: Option<Instance>,
}

/// The message of a failed step (before it is prefixed with where it happened).
type Fail = String;

fn num(v: &Value, key: &str) -> Result<u64, Fail> {
    v[key]
        .as_u64()
        .ok_or_else(|| format!("`{key}` must be a non-negative integer"))
}

fn rows(v: &Value) -> Vec<Vec<u64>> {
    let mut rows: Vec<Vec<u64>> = v
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    r.as_array()
                        .map(|r| r.iter().filter_map(Value::as_u64).collect())
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default();
    rows.sort();
    rows
}

fn values(v: &Value) -> Vec<Row> {
    rows(v)
        .into_iter()
        .map(|r| (r[0], r[1] as u16, r[2]))
        .collect()
}

fn subst(v: &Value, i: u64) -> Value {
    match v {
        Value::String(s) => match s.strip_prefix("$i") {
            Some("") => json!(i),
            Some(k) if k.starts_with(['+', '-']) => match k.parse::<i64>() {
                Ok(k) => json!(i.checked_add_signed(k).unwrap_or(0)),
                Err(_) => v.clone(),
            },
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(|x| subst(x, i)).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), subst(x, i))).collect())
        }
        _ => v.clone(),
    }
}

fn case(e: &GuestError) -> Refusal {
    let (case, payload) = match e {
        GuestError::InvalidParams(s) => ("invalid-params", s.clone()),
        GuestError::CleanedUp => ("cleaned-up", String::new()),
        GuestError::TransactionInProgress => ("transaction-in-progress", String::new()),
        GuestError::NoTransaction => ("no-transaction", String::new()),
        GuestError::UnknownWsKind(k) => ("unknown-ws-kind", k.to_string()),
        GuestError::UnknownSeqId(r) => ("unknown-seq-id", format!("{}/{}", r.kind, r.seq)),
        GuestError::AlreadyActualizing => ("already-actualizing", String::new()),
        GuestError::SequenceExhausted(r) => ("sequence-exhausted", format!("{}/{}", r.kind, r.seq)),
        GuestError::UnknownOperation(op) => ("unknown-operation", op.to_string()),
        GuestError::WrongOutcome(op) => ("wrong-outcome", op.to_string()),
        GuestError::MalformedNumbers(s) => ("malformed-numbers", s.clone()),
        GuestError::MalformedPlogPage(s) => ("malformed-plog-page", s.clone()),
        GuestError::Storage(s) => ("storage", s.clone()),
    };
    (case.to_owned(), payload)
}

fn start_outcome(o: &StartOutcome) -> Value {
    match o {
        StartOutcome::Started(offset) => json!({ "started": offset }),
        StartOutcome::NotNow(NotNowReason::Actualizing) => json!({ "not_now": "actualizing" }),
        StartOutcome::NotNow(NotNowReason::TooManyUnflushed) => {
            json!({ "not_now": "too-many-unflushed" })
        }
    }
}

fn outcome(o: &Value) -> Result<Outcome, Fail> {
    if o == "written" {
        return Ok(Outcome::Written);
    }
    if let Some(n) = o.get("next_offset").and_then(Value::as_u64) {
        return Ok(Outcome::NextOffset(n));
    }
    if let Some(s) = o.get("failed").and_then(Value::as_str) {
        return Ok(Outcome::Failed(s.to_owned()));
    }
    let page = o
        .get("plog_page")
        .ok_or_else(|| format!("unknown outcome {o}"))?;
    let mut vals = Vec::new();
    for r in page["values"].as_array().into_iter().flatten() {
        let r: Vec<u64> = r
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        vals.push(PlogValue {
            offset: r[0],
            ws: r[1],
            seq: r[2] as u16,
            value: r[3],
        });
    }
    Ok(Outcome::PlogPage(PlogPage {
        values: vals,
        next: num(page, "next")?,
        end: page["end"].as_bool().unwrap_or(false),
    }))
}

fn guest_params(p: &Value) -> Result<GuestParams, Fail> {
    let get = |key: &str, default: u64| p.get(key).and_then(Value::as_u64).unwrap_or(default);
    let mut kinds = Vec::new();
    for k in p["kinds"].as_array().into_iter().flatten() {
        let sequences = k[1]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                (
                    s[0].as_u64().unwrap_or(0) as u16,
                    s[1].as_u64().unwrap_or(0),
                )
            })
            .collect();
        kinds.push(KindSequences {
            kind: k[0].as_u64().ok_or("a kind must be an integer")? as u16,
            sequences,
        });
    }
    Ok(GuestParams {
        kinds,
        max_unflushed_values: get("max_unflushed_values", 500) as u32,
        lru_cache_size: get("lru_cache_size", 100_000) as u32,
        batcher_delay_ns: get("batcher_delay_ms", 5) * MS,
        retry_delay_ns: get("retry_delay_ms", 500) * MS,
        max_retry_delay_ns: get("max_retry_delay_ms", 500) * MS,
    })
}

/// Scenario params from guest params (the `system_params` call's result), kinds and their
/// sequences sorted.
fn params_json(p: &GuestParams) -> Value {
    let mut kinds: Vec<(u16, Vec<(u16, u64)>)> = p
        .kinds
        .iter()
        .map(|k| {
            let mut seqs = k.sequences.clone();
            seqs.sort_unstable();
            (k.kind, seqs)
        })
        .collect();
    kinds.sort_unstable();
    json!({
        "kinds": kinds,
        "max_unflushed_values": p.max_unflushed_values,
        "lru_cache_size": p.lru_cache_size,
        "batcher_delay_ms": p.batcher_delay_ns / MS,
        "retry_delay_ms": p.retry_delay_ns / MS,
        "max_retry_delay_ms": p.max_retry_delay_ns / MS,
    })
}

/// The storage adapter's half of the facade: the offset and sequence values of a platform
/// event `{"offset", "ws", "wlog", "records": [[kind, id], ...], "argument": {"id", "children"}}`.
pub fn event_values(e: &Value) -> Result<(u64, Vec<Row>), String> {
    let ws = num(e, "ws")?;
    let mut vals = vec![(ws, 1, num(e, "wlog")?)];
    for r in e["records"].as_array().into_iter().flatten() {
        let seq = match r[0].as_str().unwrap_or_default() {
            "CDoc" | "CRecord" => 3,
            "ODoc" | "ORecord" | "WDoc" | "WRecord" => 2,
            other => return Err(format!("unknown record kind {other:?}")),
        };
        vals.push((ws, seq, r[1].as_u64().ok_or("a record id")?));
    }
    let mut stack: Vec<&Value> = e.get("argument").into_iter().collect();
    while let Some(obj) = stack.pop() {
        vals.push((ws, 2, num(obj, "id")?));
        stack.extend(obj["children"].as_array().into_iter().flatten());
    }
    Ok((num(e, "offset")?, vals))
}

impl Runner {
    fn new(name: String, scenario: Value) -> Result<Self, Fail> {
        let st = &scenario["storage"];
        let mut world = World {
            next_offset: st["next_offset"].as_u64().unwrap_or(0),
            page_events: scenario["page_events"].as_u64().unwrap_or(100) as usize,
            ..World::default()
        };
        for e in st["plog"].as_array().into_iter().flatten() {
            world.plog.insert(e[0].as_u64().unwrap_or(0), values(&e[1]));
        }
        for e in st["plog_events"].as_array().into_iter().flatten() {
            let (offset, vals) = event_values(e)?;
            if world.plog.insert(offset, vals).is_some() {
                return Err(format!("two PLog events at offset {offset}"));
            }
        }
        for (ws, seq, last) in values(&st["view"]) {
            world.view.insert((ws, seq), last);
        }
        let (engine, component) = compiled();
        let mut linker = Linker::new(engine);
        SequencerPlugin::add_to_linker::<_, HasSelf<_>>(&mut linker, |d: &mut Data| d)
            .expect("link the sequencer's imports");
        // std's wasi:cli and wasi:io imports, never called (as in the host).
        linker
            .define_unknown_imports_as_traps(component)
            .expect("define unknown imports");
        Ok(Self {
            name,
            scenario,
            world: Rc::new(RefCell::new(world)),
            linker,
            instance: None,
        })
    }

    fn step(&mut self, step: &Value, at: &str) -> Result<(), String> {
        if let Some(n) = step.get("repeat").and_then(Value::as_u64) {
            let inner = step["steps"].as_array().cloned().unwrap_or_default();
            for i in 0..n {
                for (j, s) in inner.iter().enumerate() {
                    self.step(&subst(s, i), &format!("{at}[i={i}].steps[{j}]"))?;
                }
            }
            return Ok(());
        }
        self.do_step(step)
            .map_err(|e| format!("[{RUNNER}] scenario {}, {at} {step}: {e}", self.name))
    }

    fn instance(&mut self) -> Result<&mut Instance, Fail> {
        self.instance
            .as_mut()
            .ok_or_else(|| "no sequencer: a `create` step must come first".to_owned())
    }

    fn instantiate(&self) -> Result<(Store<Data>, SequencerPlugin), Fail> {
        let (engine, component) = compiled();
        let mut store = Store::new(engine, Data(self.world.clone()));
        let plugin = SequencerPlugin::instantiate(&mut store, component, &self.linker)
            .map_err(|e| format!("instantiate: {e:#}"))?;
        Ok((store, plugin))
    }

    /// A new sequencer in a fresh instance; `"system": true` in `json_params` passes the params
    /// through the component's `system-params` first.
    fn create(&mut self, json_params: &Value) -> Result<Result<Value, Refusal>, Fail> {
        let mut params = guest_params(json_params)?;
        {
            let mut w = self.world.borrow_mut();
            w.queue.clear();
            w.wake = None;
        }
        self.instance = None;
        let (mut store, plugin) = self.instantiate()?;
        if json_params["system"] == true {
            params = plugin
                .sequencer_plugin_events()
                .call_system_params(&mut store, &params)
                .map_err(|e| format!("trap: {e:#}"))?;
        }
        let created = plugin
            .sequencer_plugin_sequencer_api()
            .sequencer()
            .call_create(&mut store, &params)
            .map_err(|e| format!("trap: {e:#}"))?;
        Ok(match created {
            Ok(handle) => {
                self.instance = Some(Instance {
                    store,
                    plugin,
                    handle,
                });
                Ok(Value::Null)
            }
            Err(e) => Err(case(&e)),
        })
    }

    /// Runs a call; the outer error is a runner failure (a trap), the inner one a refusal.
    fn call(&mut self, step: &Value) -> Result<Result<Value, Refusal>, Fail> {
        let name = step["call"].as_str().unwrap_or_default();
        if name == "create" {
            let params = step
                .get("params")
                .unwrap_or(&self.scenario["params"])
                .clone();
            return self.create(&params);
        }
        if name == "system_params" {
            // A free function: a fresh instance, leaving the sequencer's alone.
            let (mut store, plugin) = self.instantiate()?;
            let p = plugin
                .sequencer_plugin_events()
                .call_system_params(&mut store, &guest_params(&step["params"])?)
                .map_err(|e| format!("trap: {e:#}"))?;
            return Ok(Ok(params_json(&p)));
        }
        let world = self.world.clone();
        let i = self.instance()?;
        let api = i.plugin.sequencer_plugin_sequencer_api().sequencer();
        let ev = i.plugin.sequencer_plugin_events();
        let (s, h) = (&mut i.store, i.handle);
        let trap = |e: wasmtime::Error| format!("trap: {e:#}");
        let unit = |r: Result<(), GuestError>| r.map(|()| Value::Null).map_err(|e| case(&e));
        let result = match name {
            "start" => {
                let r = api.call_start(s, h, num(step, "kind")? as u16, num(step, "ws")?);
                r.map_err(trap)?
                    .map(|o| start_outcome(&o))
                    .map_err(|e| case(&e))
            }
            "start_next" => {
                let seqs: Vec<u16> = step["seqs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_u64().map(|n| n as u16))
                    .collect();
                let r =
                    api.call_start_next(s, h, num(step, "kind")? as u16, num(step, "ws")?, &seqs);
                r.map_err(trap)?
                    .map(|(o, numbers)| {
                        let mut v = start_outcome(&o);
                        v["numbers"] = json!(numbers);
                        v
                    })
                    .map_err(|e| case(&e))
            }
            "next" => api
                .call_next(s, h, num(step, "seq")? as u16)
                .map_err(trap)?
                .map(|n| json!(n))
                .map_err(|e| case(&e)),
            "flush" => unit(api.call_flush(s, h).map_err(trap)?),
            "actualize" => unit(api.call_actualize(s, h).map_err(trap)?),
            "pump" => {
                api.call_pump(s, h).map_err(trap)?;
                Ok(Value::Null)
            }
            "cleanup" => {
                api.call_cleanup(s, h).map_err(trap)?;
                let mut w = world.borrow_mut();
                w.queue.clear();
                w.wake = None;
                Ok(Value::Null)
            }
            "status" => {
                let st = api.call_status(s, h).map_err(trap)?;
                Ok(json!(match st {
                    Status::Actualizing => "actualizing",
                    Status::Ready => "ready",
                    Status::InTransaction => "in-transaction",
                    Status::CleanedUp => "cleaned-up",
                }))
            }
            "held_numbers" => {
                let hn = api.call_held_numbers(s, h).map_err(trap)?;
                Ok(
                    json!({ "cached": hn.cached, "unflushed": hn.unflushed, "transaction": hn.transaction }),
                )
            }
            "deliver" => {
                let op = num(step, "op")?;
                let o = outcome(&step["outcome"])?;
                world.borrow_mut().queue.retain(|(q, _)| *q != op);
                unit(api.call_deliver(s, h, op, &o).map_err(trap)?)
            }
            "start_event" => {
                let r = ev.call_start_event(s, h, num(step, "ws")?).map_err(trap)?;
                r.map(|o| match o {
                    EventStart::Started(o) => {
                        json!({ "started": { "plog": o.plog_offset, "wlog": o.wlog_offset } })
                    }
                    EventStart::NotNow(r) => start_outcome(&StartOutcome::NotNow(r)),
                })
                .map_err(|e| case(&e))
            }
            "next_rec_id" | "next_c_rec_id" => {
                let r = if name == "next_rec_id" {
                    ev.call_next_rec_id(s, h)
                } else {
                    ev.call_next_c_rec_id(s, h)
                };
                r.map_err(trap)?.map(|n| json!(n)).map_err(|e| case(&e))
            }
            "finish_event" => unit(ev.call_finish_event(s, h).map_err(trap)?),
            "cancel_event" => unit(ev.call_cancel_event(s, h).map_err(trap)?),
            "event_status" => Ok(json!(match ev.call_status(s, h).map_err(trap)? {
                SequenceStatus::None => "none",
                SequenceStatus::Recover => "recover",
                SequenceStatus::Ready => "ready",
                SequenceStatus::Eventing => "eventing",
                SequenceStatus::Finished => "finished",
            })),
            other => return Err(format!("unknown call {other:?}")),
        };
        Ok(result)
    }

    fn pump(&mut self) -> Result<(), Fail> {
        let i = self.instance()?;
        i.plugin
            .sequencer_plugin_sequencer_api()
            .sequencer()
            .call_pump(&mut i.store, i.handle)
            .map_err(|e| format!("trap: {e:#}"))
    }

    /// The index of the first queued operation that may run now.
    fn runnable(&self) -> Option<usize> {
        let w = self.world.borrow();
        w.queue
            .iter()
            .enumerate()
            .position(|(i, (_, op))| match op {
                Op::Write(..) => !w.hold,
                Op::ReadNextOffset => !w.queue[..i].iter().any(|(_, o)| matches!(o, Op::Write(..))),
                Op::ReadPlog(_) => true,
            })
    }

    fn perform(&self, op: &Op) -> Outcome {
        let mut w = self.world.borrow_mut();
        match op {
            Op::Write(values, next) => {
                if w.fault("fail_writes") {
                    return Outcome::Failed("injected write failure".into());
                }
                for &(ws, seq, v) in values {
                    w.view.insert((ws, seq), v);
                }
                w.next_offset = *next;
                w.writes += 1;
                Outcome::Written
            }
            _ if w.fault("fail_reads") => {
                Outcome::Failed(format!("injected {} failure", op.kind()))
            }
            Op::ReadNextOffset => Outcome::NextOffset(w.next_offset),
            Op::ReadPlog(first) => {
                let events: Vec<(u64, &Vec<Row>)> = w
                    .plog
                    .range(first..)
                    .take(w.page_events)
                    .map(|(o, v)| (*o, v))
                    .collect();
                let next = events.last().map_or(*first, |(o, _)| o + 1);
                let values = events
                    .iter()
                    .flat_map(|(o, vals)| {
                        vals.iter().map(|&(ws, seq, value)| PlogValue {
                            offset: *o,
                            ws,
                            seq,
                            value,
                        })
                    })
                    .collect();
                let end = w.plog.range(next..).next().is_none();
                Outcome::PlogPage(PlogPage { values, next, end })
            }
        }
    }

    fn run_tasks(&mut self, step: &Value) -> Result<(), Fail> {
        let max = step.get("max").and_then(Value::as_u64);
        let mut performed = 0;
        while max.is_none_or(|m| performed < m) {
            let Some(i) = self.runnable() else { break };
            let (op, work) = self.world.borrow_mut().queue.remove(i);
            let outcome = self.perform(&work);
            performed += 1;
            let inst = self.instance()?;
            let r = inst
                .plugin
                .sequencer_plugin_sequencer_api()
                .sequencer()
                .call_deliver(&mut inst.store, inst.handle, op, &outcome)
                .map_err(|e| format!("trap: {e:#}"))?;
            if let Err(e) = r {
                let (c, p) = case(&e);
                return Err(format!(
                    "deliver of {} op {op} was refused: {c} {p}",
                    work.kind()
                ));
            }
        }
        if let Some(want) = step.get("expect_performed").and_then(Value::as_u64)
            && want != performed
        {
            return Err(format!(
                "expected {want} operations performed, got {performed}"
            ));
        }
        Ok(())
    }

    fn do_step(&mut self, step: &Value) -> Result<(), Fail> {
        if step.get("call").is_some() {
            let r = self.call(step)?;
            if let Some(want) = step.get("expect_error") {
                return match r {
                    Ok(v) => Err(format!("expected error {want}, got success {v}")),
                    Err((c, _)) if want == &json!(c) => Ok(()),
                    Err((c, p)) => Err(format!("expected error {want}, got {c} {p}")),
                };
            }
            let got = r.map_err(|(c, p)| format!("refused: {c} {p}"))?;
            if let Some(want) = step.get("expect") {
                let got = if ["held_numbers", "system_params"]
                    .contains(&step["call"].as_str().unwrap_or_default())
                {
                    let keys = want.as_object().cloned().unwrap_or_default();
                    Value::Object(keys.keys().map(|k| (k.clone(), got[k].clone())).collect())
                } else {
                    got
                };
                if &got != want {
                    return Err(format!("expected {want}, got {got}"));
                }
            }
        } else if let Some(run) = step.get("run") {
            if run != "tasks" {
                return Err(format!("unknown run {run}"));
            }
            self.run_tasks(step)?;
        } else if step.get("advance_ms").is_some() {
            let due = {
                let mut w = self.world.borrow_mut();
                w.now += num(step, "advance_ms")? * MS;
                let due = w.wake.is_some_and(|at| w.now >= at);
                if due {
                    w.wake = None;
                }
                due
            };
            if due {
                self.pump()?;
            }
        } else if let Some(h) = step.get("hold_writes") {
            self.world.borrow_mut().hold = h.as_bool().unwrap_or(false);
        } else if let Some(f) = step.get("fault").and_then(Value::as_object) {
            let mut w = self.world.borrow_mut();
            for (k, v) in f {
                if !["fail_writes", "fail_reads", "fail_number_reads"].contains(&k.as_str()) {
                    return Err(format!("unknown fault {k:?}"));
                }
                w.faults.insert(k.clone(), v.as_u64().unwrap_or(0));
            }
        } else if step.get("append").is_some() || step.get("append_event").is_some() {
            let (offset, vals) = match step.get("append") {
                Some(a) => (a[0].as_u64().ok_or("append: an offset")?, values(&a[1])),
                None => event_values(&step["append_event"])?,
            };
            let mut w = self.world.borrow_mut();
            let expected = w.plog.keys().next_back().map_or(1, |o| o + 1);
            if offset != expected {
                return Err(format!(
                    "append at {offset}: the PLog's next offset is {expected}"
                ));
            }
            w.plog.insert(offset, vals);
        } else if let Some(want) = step.get("expect_storage") {
            self.expect_storage(want)?;
        } else if let Some(want) = step.get("expect_pending") {
            self.expect_pending(want)?;
        } else if let Some(want) = step.get("expect_wake_ms") {
            let got = self.world.borrow().wake;
            let got = got.map_or(Value::Null, |ns| {
                if ns % MS == 0 {
                    json!(ns / MS)
                } else {
                    json!(ns as f64 / MS as f64)
                }
            });
            if &got != want {
                return Err(format!("expected wake at {want} ms, got {got}"));
            }
        } else {
            return Err("unknown step".into());
        }
        Ok(())
    }

    fn expect_storage(&self, want: &Value) -> Result<(), Fail> {
        let w = self.world.borrow();
        for (key, value) in want.as_object().into_iter().flatten() {
            let got = match key.as_str() {
                "view" => {
                    let mut v: Vec<Vec<u64>> = w
                        .view
                        .iter()
                        .map(|(&(ws, s), &last)| vec![ws, u64::from(s), last])
                        .collect();
                    v.sort();
                    if v == rows(value) {
                        continue;
                    }
                    json!(v)
                }
                "next_offset" => json!(w.next_offset),
                "writes" => json!(w.writes),
                "plog_next" => json!(w.plog.keys().next_back().map_or(1, |o| o + 1)),
                "consistent" => json!(w.plog.range(..w.next_offset).all(|(_, vals)| {
                    vals.iter()
                        .all(|&(ws, s, v)| w.view.get(&(ws, s)).copied().unwrap_or(0) >= v)
                })),
                other => return Err(format!("unknown storage check {other:?}")),
            };
            if &got != value {
                return Err(format!("storage {key}: expected {value}, got {got}"));
            }
        }
        Ok(())
    }

    fn expect_pending(&self, want: &Value) -> Result<(), Fail> {
        let got: Vec<Value> = self
            .world
            .borrow()
            .queue
            .iter()
            .map(|(op, work)| match work {
                Op::Write(values, next) => {
                    let mut v: Vec<Vec<u64>> = values
                        .iter()
                        .map(|&(ws, s, n)| vec![ws, u64::from(s), n])
                        .collect();
                    v.sort();
                    json!({ "kind": "write", "op": op, "values": v, "next_offset": next })
                }
                Op::ReadNextOffset => json!({ "kind": "read-next-offset", "op": op }),
                Op::ReadPlog(first) => json!({ "kind": "read-plog", "op": op, "first": first }),
            })
            .collect();
        let want_list = want.as_array().cloned().unwrap_or_default();
        let ok = got.len() == want_list.len()
            && want_list.iter().zip(&got).all(|(w, g)| {
                w.as_object().into_iter().flatten().all(|(k, v)| {
                    if k == "values" {
                        json!(rows(v)) == g[k]
                    } else {
                        v == &g[k]
                    }
                })
            });
        if ok {
            Ok(())
        } else {
            Err(format!("expected pending {want}, got {}", json!(got)))
        }
    }
}
