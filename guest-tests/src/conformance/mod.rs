//! The Rust runners of the conformance suite (`guest-tests/conformance/`): every scenario
//! through the compiled component under wasmtime (runner `rust`, linked by the host's link
//! module) and through the native shell (runner `native`), over one model of the host
//! ([`world`]). The format and the host model are in `guest-tests/conformance/README.md`.

mod scenario;
mod world;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sequencer::shell::{EventStart, Shell};
use sequencer::{Error, Outcome, PlogPage, SeqValue, Start, Ticket, Work, facade};
use sequencer_host::runtime::link::{
    self, Instance, Limits, Linked, guest_params, params_from_guest,
};
use sequencer_host::runtime::{
    EventStart as WitEventStart, GuestError, GuestParams, Outcome as WitOutcome,
    SequenceStatus as WitSequenceStatus,
};
use sequencer_host::{NotNowReason, StartOutcome};
use serde_json::{Value, json};

use scenario::{OutcomeJson, ParamsJson, PendingExpect, Row, Step, StorageExpect, subst};
pub use scenario::{Scenario, event_values};
use world::{World, WorldHandle};

const MS: u64 = 1_000_000;

/// Which engine a scenario runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// The compiled component under wasmtime.
    Component,
    /// The native shell.
    Native,
}

impl Runner {
    /// The name failures carry.
    pub fn name(self) -> &'static str {
        match self {
            Runner::Component => "rust",
            Runner::Native => "native",
        }
    }
}

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

/// Reads a scenario file.
pub fn read_scenario(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs one scenario file on `runner`; the error names the runner, the scenario and the step.
pub fn run_scenario(path: &Path, runner: Runner) -> Result<(), String> {
    let name = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let at = |e: String| format!("[{}] scenario {name}: {e}", runner.name());
    let scenario = read_scenario(path).map_err(at)?;
    let mut run = Run::new(&scenario, runner).map_err(at)?;
    for (i, step) in scenario.steps.iter().enumerate() {
        run.step(step, &format!("steps[{i}]"))
            .map_err(|e| format!("[{}] scenario {name}, {e}", runner.name()))?;
    }
    Ok(())
}

/// The component linked once per process, its imports over the scenario's world.
fn linked() -> &'static Linked<WorldHandle> {
    static LINKED: OnceLock<Linked<WorldHandle>> = OnceLock::new();
    LINKED.get_or_init(|| {
        Linked::from_file(
            &sequencer_host::runtime::link::component_path(),
            Limits::default(),
        )
        .unwrap_or_else(|e| panic!("{e}\n(build it first: bash scripts/build-component.sh)"))
    })
}

/// A call's result as JSON, or its refusal: the WIT case name and a detail.
type Answer = Result<Value, (String, String)>;

/// A step that failed (before it is prefixed with where it happened).
type Fail = String;

/// The sequencer a scenario drives.
#[allow(
    clippy::large_enum_variant,
    reason = "one engine per scenario, held for its length: its size costs nothing"
)]
enum Engine {
    Component(Instance<WorldHandle>),
    Native(Shell),
}

struct Run<'s> {
    scenario: &'s Scenario,
    runner: Runner,
    world: WorldHandle,
    engine: Option<Engine>,
}

fn trap(e: wasmtime::Error) -> Fail {
    format!("trap: {e:#}")
}

fn refusal(e: &GuestError) -> (String, String) {
    (e.case().to_owned(), e.describe())
}

/// A core refusal under the case the component reports it as, with the core's own text.
fn native_refusal(e: &Error) -> (String, String) {
    let case = GuestError::from(e.clone()).case();
    (case.to_owned(), e.to_string())
}

fn wit_params(p: &ParamsJson) -> GuestParams {
    GuestParams {
        kinds: p
            .kinds
            .iter()
            .map(|(kind, sequences)| link_kind(*kind, sequences))
            .collect(),
        max_unflushed_values: p.max_unflushed_values,
        lru_cache_size: p.lru_cache_size,
        batcher_delay_ns: p.batcher_delay_ms * MS,
        retry_delay_ns: p.retry_delay_ms * MS,
        max_retry_delay_ns: p.max_retry_delay_ms * MS,
        retry_jitter_percent: p.retry_jitter_percent,
    }
}

fn link_kind(
    kind: u16, sequences: &[(u16, u64)],
) -> sequencer_host::runtime::bindings::sequencer::plugin::types::KindSequences {
    sequencer_host::runtime::bindings::sequencer::plugin::types::KindSequences {
        kind,
        sequences: sequences.to_vec(),
    }
}

/// Scenario params from WIT params (a `system_params` result), kinds and sequences sorted.
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
        "retry_jitter_percent": p.retry_jitter_percent,
    })
}

fn not_now_json(reason: &str) -> Value {
    json!({ "not_now": reason })
}

fn wit_started(o: &StartOutcome) -> Value {
    match o {
        StartOutcome::Started(offset) => json!({ "started": offset }),
        StartOutcome::NotNow(r) => not_now_json(wit_reason(*r)),
    }
}

fn wit_reason(r: NotNowReason) -> &'static str {
    match r {
        NotNowReason::Actualizing => sequencer::NotNowReason::Actualizing.wit_name(),
        NotNowReason::TooManyUnflushed => sequencer::NotNowReason::TooManyUnflushed.wit_name(),
    }
}

/// A native start's JSON; a load cannot come back (the world answers reads at once).
fn native_started(s: Result<Start, Error>) -> Answer {
    match s {
        Ok(Start::Started(offset)) => Ok(json!({ "started": offset })),
        Ok(Start::NotNow(r)) => Ok(not_now_json(r.wit_name())),
        Ok(Start::Load(_)) => Err(("storage".into(), "a numbers read was not answered".into())),
        Err(e) => Err(native_refusal(&e)),
    }
}

fn wit_outcome(o: &OutcomeJson) -> WitOutcome {
    match o {
        OutcomeJson::Written => WitOutcome::Written,
        OutcomeJson::NextOffset(n) => WitOutcome::NextOffset(*n),
        OutcomeJson::Failed(m) => WitOutcome::Failed(m.clone()),
        OutcomeJson::PlogPage(p) => {
            WitOutcome::PlogPage(link::wit_page(&native_page(&p.values), p.next, p.end))
        }
    }
}

fn native_page(values: &[(u64, u64, u16, u64)]) -> Vec<(u64, SeqValue)> {
    values
        .iter()
        .map(|&(offset, ws, seq, value)| (offset, SeqValue::new(ws, seq, value)))
        .collect()
}

fn rows(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_unstable();
    rows
}

impl<'s> Run<'s> {
    fn new(scenario: &'s Scenario, runner: Runner) -> Result<Self, Fail> {
        let mut world = World {
            page_events: scenario.page_events,
            ..World::default()
        };
        let st = &scenario.storage;
        world.storage.next_offset = st.next_offset;
        for (offset, values) in &st.plog {
            world.storage.seed_event(*offset, &to_values(values));
        }
        for e in &st.plog_events {
            let (offset, values) = event_values(e)?;
            if world.storage.plog.contains_key(&offset) {
                return Err(format!("storage: two PLog events at offset {offset}"));
            }
            world.storage.seed_event(offset, &to_values(&values));
        }
        for &(ws, seq, last) in &st.view {
            world
                .storage
                .numbers
                .insert(sequencer::NumberKey { ws, seq }, last);
        }
        Ok(Self {
            scenario,
            runner,
            world: WorldHandle(std::sync::Arc::new(std::sync::Mutex::new(world))),
            engine: None,
        })
    }

    fn step(&mut self, step: &Value, at: &str) -> Result<(), String> {
        let parsed: Step =
            serde_json::from_value(step.clone()).map_err(|e| format!("{at} {step}: {e}"))?;
        if let (Some(n), Some(inner)) = (parsed.repeat, &parsed.steps) {
            for i in 0..n {
                for (j, s) in inner.iter().enumerate() {
                    self.step(&subst(s, i), &format!("{at}[i={i}].steps[{j}]"))?;
                }
            }
            return Ok(());
        }
        self.do_step(&parsed)
            .map_err(|e| format!("{at} {step}: {e}"))
    }

    fn do_step(&mut self, step: &Step) -> Result<(), Fail> {
        if let Some(name) = &step.call {
            let answer = self.call(name, step)?;
            if let Some(want) = &step.expect_error {
                return match answer {
                    Ok(v) => Err(format!("expected error {want}, got success {v}")),
                    Err((case, _)) if &case == want => Ok(()),
                    Err((case, detail)) => {
                        Err(format!("expected error {want}, got {case} {detail}"))
                    }
                };
            }
            let got = answer.map_err(|(c, d)| format!("refused: {c} {d}"))?;
            if let Some(want) = &step.expect {
                // held_numbers and system_params compare the keys given only.
                let got = match (name.as_str(), want.as_object()) {
                    ("held_numbers" | "system_params", Some(keys)) => {
                        Value::Object(keys.keys().map(|k| (k.clone(), got[k].clone())).collect())
                    }
                    _ => got,
                };
                if &got != want {
                    return Err(format!("expected {want}, got {got}"));
                }
            }
        } else if let Some(run) = &step.run {
            if run != "tasks" {
                return Err(format!("unknown run {run}"));
            }
            self.run_tasks(step.max, step.expect_performed)?;
        } else if let Some(ms) = step.advance_ms {
            let due = {
                let mut w = self.world.lock();
                w.now += ms * MS;
                let due = w.wake.is_some_and(|at| w.now >= at);
                if due {
                    w.wake = None;
                }
                due
            };
            if due {
                self.pump()?;
            }
        } else if let Some(hold) = step.hold_writes {
            self.world.lock().storage.faults.hold_writes = hold;
        } else if let Some(f) = &step.fault {
            let faults = &mut self.world.lock().storage.faults;
            if let Some(n) = f.fail_writes {
                faults.fail_writes = n;
            }
            if let Some(n) = f.fail_reads {
                faults.fail_reads = n;
            }
            if let Some(n) = f.fail_number_reads {
                faults.fail_number_reads = n;
            }
        } else if step.append.is_some() || step.append_event.is_some() {
            let (offset, values) = match (&step.append, &step.append_event) {
                (Some((offset, values)), _) => (*offset, values.clone()),
                (None, Some(e)) => event_values(e)?,
                (None, None) => unreachable!("checked above"),
            };
            self.world
                .lock()
                .storage
                .append(offset, &to_values(&values))
                .map_err(|e| {
                    format!(
                        "append at {}: the PLog's next offset is {}",
                        e.offered, e.expected
                    )
                })?;
        } else if let Some(want) = &step.expect_storage {
            self.expect_storage(want)?;
        } else if let Some(want) = &step.expect_pending {
            self.expect_pending(want)?;
        } else if let Some(want) = &step.expect_wake_ms {
            let got = self.world.lock().wake.map_or(Value::Null, |ns| {
                if ns % MS == 0 {
                    json!(ns / MS)
                } else {
                    json!(ns as f64 / MS as f64)
                }
            });
            if &got != want {
                return Err(format!("expected wake at {want} ms, got {got}"));
            }
        } else if let Some((lo, hi)) = step.expect_wake_within_ms {
            let got = self.world.lock().wake.map(|ns| ns as f64 / MS as f64);
            if !got.is_some_and(|t| lo <= t && t <= hi) {
                return Err(format!(
                    "expected a wake-up within [{lo}, {hi}] ms, got {got:?}"
                ));
            }
        } else {
            return Err("unknown step".into());
        }
        Ok(())
    }

    /// A new sequencer over the same world; earlier queued work and wake-up are dropped.
    fn create(&mut self, p: &ParamsJson) -> Result<Answer, Fail> {
        {
            let mut w = self.world.lock();
            w.queue.clear();
            w.wake = None;
        }
        self.engine = None;
        let mut params = wit_params(p);
        let created = match self.runner {
            Runner::Component => {
                let (mut store, plugin) = linked().instantiate(self.world.clone()).map_err(trap)?;
                if p.system {
                    params = plugin
                        .sequencer_plugin_events()
                        .call_system_params(&mut store, &params)
                        .map_err(trap)?;
                }
                let created = plugin
                    .sequencer_plugin_sequencer_api()
                    .sequencer()
                    .call_create(&mut store, &params)
                    .map_err(trap)?;
                created
                    .map(|handle| {
                        Engine::Component(Instance {
                            store,
                            plugin,
                            handle,
                        })
                    })
                    .map_err(|e| refusal(&e))
            }
            Runner::Native => {
                let mut core = params_from_guest(&params);
                if p.system {
                    core = facade::system_params(core);
                }
                Shell::create(core, &mut self.world)
                    .map(Engine::Native)
                    .map_err(|e| native_refusal(&e))
            }
        };
        Ok(created.map(|engine| {
            self.engine = Some(engine);
            Value::Null
        }))
    }

    fn system_params(&self, p: &ParamsJson) -> Result<Value, Fail> {
        let params = wit_params(p);
        let result = match self.runner {
            Runner::Component => {
                // A free function: a fresh instance, leaving the sequencer's alone.
                let (mut store, plugin) =
                    linked().instantiate(WorldHandle::default()).map_err(trap)?;
                plugin
                    .sequencer_plugin_events()
                    .call_system_params(&mut store, &params)
                    .map_err(trap)?
            }
            Runner::Native => guest_params(&facade::system_params(params_from_guest(&params))),
        };
        Ok(params_json(&result))
    }

    /// Runs a call; the outer error is a runner failure (a trap), the inner one a refusal.
    fn call(&mut self, name: &str, step: &Step) -> Result<Answer, Fail> {
        match name {
            "create" => {
                let p = step
                    .params
                    .as_ref()
                    .unwrap_or(&self.scenario.params)
                    .clone();
                return self.create(&p);
            }
            "system_params" => {
                let p = step.params.as_ref().ok_or("system_params needs params")?;
                return self.system_params(p).map(Ok);
            }
            _ => {}
        }
        let need = |x: Option<u64>, what: &str| x.ok_or_else(|| format!("`{what}` is required"));
        let kind = step.kind.unwrap_or_default();
        let ws = step.ws;
        let world = &mut self.world;
        let engine = self
            .engine
            .as_mut()
            .ok_or("no sequencer: a `create` step must come first")?;
        let answer = match engine {
            Engine::Component(i) => {
                let api = i.plugin.sequencer_plugin_sequencer_api().sequencer();
                let ev = i.plugin.sequencer_plugin_events();
                let (s, h) = (&mut i.store, i.handle);
                let unit =
                    |r: Result<(), GuestError>| r.map(|()| Value::Null).map_err(|e| refusal(&e));
                match name {
                    "start" => api
                        .call_start(s, h, kind, need(ws, "ws")?)
                        .map_err(trap)?
                        .map(|o| wit_started(&o))
                        .map_err(|e| refusal(&e)),
                    "start_next" => {
                        let seqs = step.seqs.clone().unwrap_or_default();
                        api.call_start_next(s, h, kind, need(ws, "ws")?, &seqs)
                            .map_err(trap)?
                            .map(|(o, numbers)| {
                                let mut v = wit_started(&o);
                                v["numbers"] = json!(numbers);
                                v
                            })
                            .map_err(|e| refusal(&e))
                    }
                    "next" => api
                        .call_next(s, h, step.seq.unwrap_or_default())
                        .map_err(trap)?
                        .map(|n| json!(n))
                        .map_err(|e| refusal(&e)),
                    "flush" => unit(api.call_flush(s, h).map_err(trap)?),
                    "actualize" => unit(api.call_actualize(s, h).map_err(trap)?),
                    "pump" => api.call_pump(s, h).map(|()| Ok(Value::Null)).map_err(trap)?,
                    "cleanup" => api.call_cleanup(s, h).map(|()| Ok(Value::Null)).map_err(trap)?,
                    "status" => Ok(json!(
                        link::core_status(api.call_status(s, h).map_err(trap)?).wit_name()
                    )),
                    "held_numbers" => {
                        let hn = api.call_held_numbers(s, h).map_err(trap)?;
                        Ok(json!({ "cached": hn.cached, "unflushed": hn.unflushed, "transaction": hn.transaction }))
                    }
                    "deliver" => {
                        let op = need(step.op, "op")?;
                        let outcome = wit_outcome(step.outcome.as_ref().ok_or("`outcome` is required")?);
                        world.lock().queue.retain(|w| w.ticket() != Ticket(op));
                        unit(api.call_deliver(s, h, op, &outcome).map_err(trap)?)
                    }
                    "start_event" => ev
                        .call_start_event(s, h, need(ws, "ws")?)
                        .map_err(trap)?
                        .map(|o| match o {
                            WitEventStart::Started(o) => {
                                json!({ "started": { "plog": o.plog_offset, "wlog": o.wlog_offset } })
                            }
                            WitEventStart::NotNow(r) => not_now_json(wit_reason(r)),
                        })
                        .map_err(|e| refusal(&e)),
                    "next_rec_id" => ev.call_next_rec_id(s, h).map_err(trap)?.map(|n| json!(n)).map_err(|e| refusal(&e)),
                    "next_c_rec_id" => ev.call_next_c_rec_id(s, h).map_err(trap)?.map(|n| json!(n)).map_err(|e| refusal(&e)),
                    "finish_event" => unit(ev.call_finish_event(s, h).map_err(trap)?),
                    "cancel_event" => unit(ev.call_cancel_event(s, h).map_err(trap)?),
                    "event_status" => Ok(json!(wit_sequence_status(ev.call_status(s, h).map_err(trap)?))),
                    other => return Err(format!("unknown call {other:?}")),
                }
            }
            Engine::Native(shell) => {
                let unit =
                    |r: Result<(), Error>| r.map(|()| Value::Null).map_err(|e| native_refusal(&e));
                let number =
                    |r: Result<u64, Error>| r.map(|n| json!(n)).map_err(|e| native_refusal(&e));
                match name {
                    "start" => native_started(shell.start(kind, need(ws, "ws")?, world)),
                    "start_next" => {
                        let seqs = step.seqs.clone().unwrap_or_default();
                        let mut numbers = vec![0; seqs.len()];
                        let r = shell.start_next(kind, need(ws, "ws")?, &seqs, &mut numbers, world);
                        native_started(r).map(|mut v| {
                            if v.get("started").is_none() {
                                numbers.clear();
                            }
                            v["numbers"] = json!(numbers);
                            v
                        })
                    }
                    "next" => number(shell.next(step.seq.unwrap_or_default())),
                    "flush" => unit(shell.flush(world)),
                    "actualize" => unit(shell.actualize(world)),
                    "pump" => {
                        shell.pump(world);
                        Ok(Value::Null)
                    }
                    "cleanup" => {
                        shell.cleanup(world);
                        Ok(Value::Null)
                    }
                    "status" => Ok(json!(shell.status().wit_name())),
                    "held_numbers" => {
                        let hn = shell.held_numbers();
                        let clamp = |n: usize| n.min(u32::MAX as usize);
                        Ok(
                            json!({ "cached": clamp(hn.cached), "unflushed": clamp(hn.unflushed), "transaction": clamp(hn.transaction) }),
                        )
                    }
                    "deliver" => {
                        let op = need(step.op, "op")?;
                        let outcome = step.outcome.as_ref().ok_or("`outcome` is required")?;
                        world.lock().queue.retain(|w| w.ticket() != Ticket(op));
                        let values;
                        let outcome = match outcome {
                            OutcomeJson::Written => Outcome::Written,
                            OutcomeJson::NextOffset(n) => Outcome::NextOffset(*n),
                            OutcomeJson::Failed(_) => Outcome::Failed,
                            OutcomeJson::PlogPage(p) => {
                                values = native_page(&p.values);
                                Outcome::PlogPage(PlogPage {
                                    values: &values,
                                    next: p.next,
                                    end: p.end,
                                })
                            }
                        };
                        unit(shell.deliver(Ticket(op), outcome, world))
                    }
                    "start_event" => match shell.start_event(need(ws, "ws")?, world) {
                        Ok(EventStart::Started(o)) => Ok(
                            json!({ "started": { "plog": o.plog_offset, "wlog": o.wlog_offset } }),
                        ),
                        Ok(EventStart::NotNow(r)) => Ok(not_now_json(r.wit_name())),
                        Ok(EventStart::Load(_)) => {
                            Err(("storage".into(), "a numbers read was not answered".into()))
                        }
                        Err(e) => Err(native_refusal(&e)),
                    },
                    "next_rec_id" => number(shell.next_rec_id()),
                    "next_c_rec_id" => number(shell.next_c_rec_id()),
                    "finish_event" => unit(shell.finish_event(world)),
                    "cancel_event" => unit(shell.cancel_event(world)),
                    "event_status" => Ok(json!(shell.sequence_status().wit_name())),
                    other => return Err(format!("unknown call {other:?}")),
                }
            }
        };
        if name == "cleanup" {
            let mut w = self.world.lock();
            w.queue.clear();
            w.wake = None;
        }
        Ok(answer)
    }

    fn pump(&mut self) -> Result<(), Fail> {
        let world = &mut self.world;
        match self.engine.as_mut() {
            None => Err("no sequencer: a `create` step must come first".into()),
            Some(Engine::Component(i)) => i
                .plugin
                .sequencer_plugin_sequencer_api()
                .sequencer()
                .call_pump(&mut i.store, i.handle)
                .map_err(trap),
            Some(Engine::Native(shell)) => {
                shell.pump(world);
                Ok(())
            }
        }
    }

    /// Performs queued operations (per the order rule) and reports each outcome, which must be
    /// accepted.
    fn run_tasks(&mut self, max: Option<u64>, expect: Option<u64>) -> Result<(), Fail> {
        let mut performed = 0;
        while max.is_none_or(|m| performed < m) {
            let (work, outcome) = {
                let mut w = self.world.lock();
                let Some(i) = w.runnable() else { break };
                let work = w.queue.remove(i);
                let outcome = perform(&mut w, &work);
                (work, outcome)
            };
            performed += 1;
            let op = work.ticket().0;
            let refused = self.deliver(op, &outcome)?;
            if let Some((case, detail)) = refused {
                return Err(format!(
                    "deliver of {} op {op} was refused: {case} {detail}",
                    work.kind_name()
                ));
            }
        }
        if let Some(want) = expect
            && want != performed
        {
            return Err(format!(
                "expected {want} operations performed, got {performed}"
            ));
        }
        Ok(())
    }

    /// Reports `outcome` to the engine; `Some` if it was refused.
    fn deliver(&mut self, op: u64, outcome: &Performed) -> Result<Option<(String, String)>, Fail> {
        let world = &mut self.world;
        match self.engine.as_mut() {
            None => Err("no sequencer".into()),
            Some(Engine::Component(i)) => {
                let outcome = match outcome {
                    Performed::Written => WitOutcome::Written,
                    Performed::NextOffset(n) => WitOutcome::NextOffset(*n),
                    Performed::Failed(m) => WitOutcome::Failed(m.clone()),
                    Performed::Page { values, next, end } => {
                        WitOutcome::PlogPage(link::wit_page(values, *next, *end))
                    }
                };
                let r = i
                    .plugin
                    .sequencer_plugin_sequencer_api()
                    .sequencer()
                    .call_deliver(&mut i.store, i.handle, op, &outcome)
                    .map_err(trap)?;
                Ok(r.err().map(|e| refusal(&e)))
            }
            Some(Engine::Native(shell)) => {
                let outcome = match outcome {
                    Performed::Written => Outcome::Written,
                    Performed::NextOffset(n) => Outcome::NextOffset(*n),
                    Performed::Failed(_) => Outcome::Failed,
                    Performed::Page { values, next, end } => Outcome::PlogPage(PlogPage {
                        values,
                        next: *next,
                        end: *end,
                    }),
                };
                Ok(shell
                    .deliver(Ticket(op), outcome, world)
                    .err()
                    .map(|e| native_refusal(&e)))
            }
        }
    }

    fn expect_storage(&self, want: &StorageExpect) -> Result<(), Fail> {
        let w = self.world.lock();
        let st = &w.storage;
        if let Some(view) = &want.view {
            let mut got: Vec<Row> = st.numbers.iter().map(|(k, &v)| (k.ws, k.seq, v)).collect();
            got.sort_unstable();
            if got != rows(view.clone()) {
                return Err(format!("storage view: expected {view:?}, got {got:?}"));
            }
        }
        let checks = [
            ("next_offset", want.next_offset, st.next_offset),
            ("writes", want.writes, w.writes()),
            ("plog_next", want.plog_next, st.plog_next()),
        ];
        for (key, want, got) in checks {
            if let Some(want) = want
                && want != got
            {
                return Err(format!("storage {key}: expected {want}, got {got}"));
            }
        }
        if let Some(want) = want.consistent {
            let got = st.offset_ahead_of_values().is_none();
            if want != got {
                return Err(format!("storage consistent: expected {want}, got {got}"));
            }
        }
        Ok(())
    }

    fn expect_pending(&self, want: &[PendingExpect]) -> Result<(), Fail> {
        let w = self.world.lock();
        let ok = want.len() == w.queue.len()
            && want.iter().zip(&w.queue).all(|(e, work)| {
                let (values, next_offset, first) = match work {
                    Work::Write(wr) => {
                        let values: Vec<Row> = wr
                            .values
                            .iter()
                            .map(|v| (v.key.ws, v.key.seq, v.value))
                            .collect();
                        (Some(rows(values)), Some(wr.next_plog_offset), None)
                    }
                    Work::ReadNextOffset { .. } => (None, None, None),
                    Work::ReadPlog { from, .. } => (None, None, Some(*from)),
                };
                e.kind == work.kind_name()
                    && e.op.is_none_or(|op| op == work.ticket().0)
                    && e.values
                        .as_ref()
                        .is_none_or(|v| Some(rows(v.clone())) == values)
                    && e.next_offset.is_none_or(|n| Some(n) == next_offset)
                    && e.first.is_none_or(|f| Some(f) == first)
            });
        if ok {
            Ok(())
        } else {
            let got: Vec<String> = w
                .queue
                .iter()
                .map(|work| format!("{} op {}", work.kind_name(), work.ticket().0))
                .collect();
            Err(format!("expected pending {want:?}, got {got:?}"))
        }
    }
}

/// A storage operation's outcome, as the world performed it.
enum Performed {
    Written,
    NextOffset(u64),
    Page {
        values: Vec<(u64, SeqValue)>,
        next: u64,
        end: bool,
    },
    Failed(String),
}

/// Performs one operation on the world's storage: a write stores its values, then its offset;
/// a read answers from storage as it is now; the fault counters fail them.
fn perform(w: &mut World, work: &Work) -> Performed {
    match work {
        Work::Write(wr) => {
            if w.storage.faults.write_fails() {
                return Performed::Failed("injected write failure".into());
            }
            w.storage.write(&wr.values, wr.next_plog_offset);
            Performed::Written
        }
        _ if w.storage.faults.read_fails() => {
            Performed::Failed(format!("injected {} failure", work.kind_name()))
        }
        Work::ReadNextOffset { .. } => Performed::NextOffset(w.storage.next_offset),
        Work::ReadPlog { from, .. } => {
            let (values, next, end) = w.storage.read_plog(*from, w.page_events);
            Performed::Page { values, next, end }
        }
    }
}

fn to_values(rows: &[Row]) -> Vec<SeqValue> {
    rows.iter()
        .map(|&(ws, seq, value)| SeqValue::new(ws, seq, value))
        .collect()
}

fn wit_sequence_status(s: WitSequenceStatus) -> &'static str {
    let core = match s {
        WitSequenceStatus::None => facade::SequenceStatus::None,
        WitSequenceStatus::Recover => facade::SequenceStatus::Recover,
        WitSequenceStatus::Ready => facade::SequenceStatus::Ready,
        WitSequenceStatus::Eventing => facade::SequenceStatus::Eventing,
        WitSequenceStatus::Finished => facade::SequenceStatus::Finished,
    };
    core.wit_name()
}
