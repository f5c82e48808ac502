//! The guest's exported functions, type-checked once per component instead of once per
//! instance.
//!
//! wasmtime's generated bindings look every export up and type-check it each time an instance
//! is made (`…Indices::load`): 63 functions, about a third of what creating an on-demand
//! instance costs (W6). The types are the component's, not the instance's, so here they are
//! checked against the calls below on a component's first instance (`ExportIndices::load`)
//! and every later instance only packages the already-known export indices.
//!
//! An instance looks each function up on its first call, not when it is made: since wasmtime
//! 50 a lookup also resolves the function's entry point, and looking all 60 up front stood out
//! in W6's profile (`Func::from_lifted_func`), while most instances call a handful.
//!
//! Each table lists one exported interface of `wit/sequencer.wit` with the Rust types of the
//! generated bindings (the same records and variants, from [`super::bindings`]). A function
//! whose WIT signature no longer matches its line here fails that first check with an error
//! naming it, and the instance is not made; a function missing from a table is simply not
//! callable from the host.
//!
//! A mechanism for speed (docs/ARCHITECTURE.md, "What exists only for speed"): 408 lines and
//! one `unsafe`, for W6 on demand 97 → 70 µs and pooled 57 → 36 (d82a2f0). Remove it when
//! wasmtime checks typed exports once per component itself.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::component::{Component, ComponentExportIndex, Func, Instance, ResourceAny};
use wasmtime::{AsContextMut, StoreContextMut};

use super::bindings::exports::sequencer::plugin::events::EventAhead;
use super::bindings::sequencer::plugin::types::AheadNumbers;
use super::bindings::{
    BatchNumbers, EventStart, GuestError as Error, GuestParams as Params, HeldNumbers, Outcome,
    QuadNumbers, Refusal, SeqQuad, SequenceStatus, StartOutcome, Status,
};

/// The version of the WIT package the tables below were written for (the interfaces are
/// exported as `sequencer:plugin/<name>@<version>`).
const PACKAGE: &str = "sequencer:plugin";
const VERSION: &str = "0.3.0";

/// Declares one export table: the struct of the interface's functions (a method per function,
/// with the generated bindings' name and signature), and the struct of their indices in a
/// component with its load and its type check.
macro_rules! export_table {
    (
        $(#[$doc:meta])*
        $table:ident, $indices:ident, interface $iface:literal {
            $( fn $call:ident = $wit:literal ($($arg:ident : $ty:ty),*) $(-> $ret:ty)?; )*
        }
    ) => {
        $(#[$doc])*
        ///
        /// Each function is looked up in its instance on its first call, not when the instance
        /// is made: most instances call a few of them.
        #[derive(Clone)]
        pub struct $table {
            instance: ::wasmtime::component::Instance,
            indices: ::std::sync::Arc<$indices>,
            $( $call: ::std::cell::Cell<Option<::wasmtime::component::Func>>, )*
        }

        /// Where each function of the table is in one component: looked up once.
        #[derive(Clone)]
        pub(crate) struct $indices {
            $( $call: ::wasmtime::component::ComponentExportIndex, )*
        }

        impl $indices {
            /// The indices of the table's functions in `component`; an error names the first
            /// one it does not export.
            pub(crate) fn new(
                component: &::wasmtime::component::Component,
            ) -> ::wasmtime::Result<Self> {
                let interface = $crate::runtime::exports::interface_index(component, $iface)?;
                Ok(Self {
                    $( $call: $crate::runtime::exports::function_index(
                        component, &interface, $iface, $wit,
                    )?, )*
                })
            }

            /// The table for `instance`, without type checks (see [`ExportIndices::load`]);
            /// nothing is looked up yet.
            fn table(
                self: &::std::sync::Arc<Self>,
                instance: &::wasmtime::component::Instance,
            ) -> $table {
                $table {
                    instance: *instance,
                    indices: ::std::sync::Arc::clone(self),
                    $( $call: ::std::cell::Cell::new(None), )*
                }
            }

            /// Whether every function of `instance` has the type its method below calls it
            /// with; an error names the first that does not.
            pub(crate) fn check<T: 'static>(
                &self,
                store: &mut ::wasmtime::StoreContextMut<'_, T>,
                instance: &::wasmtime::component::Instance,
            ) -> ::wasmtime::Result<()> {
                $(
                    instance
                        .get_typed_func::<($($ty,)*), ($($ret,)?)>(&mut *store, &self.$call)
                        .map_err(|e| e.context($crate::runtime::exports::mismatch($iface, $wit)))?;
                )*
                Ok(())
            }
        }

        impl $table {
            $(
                #[doc = concat!("Calls the guest's `", $wit, "` (interface `", $iface,
                    "` of `wit/sequencer.wit`, which documents it).")]
                // Inlined as before the lookup became lazy (the first call's is out of line):
                // a call of its own here costs about 5 ns of a 100 ns empty call.
                #[inline]
                pub fn $call<S: ::wasmtime::AsContextMut>(
                    &self,
                    mut store: S,
                    $($arg: $ty),*
                ) -> ::wasmtime::Result<export_table!(@ret $($ret)?)> {
                    let mut store = ::wasmtime::AsContextMut::as_context_mut(&mut store);
                    let func = match self.$call.get() {
                        Some(func) => func,
                        None => $crate::runtime::exports::first_call(
                            &mut store, &self.instance, &self.$call, &self.indices.$call, $iface, $wit,
                        )?,
                    };
                    // SAFETY: `new_unchecked` asks that the function have exactly these
                    // parameter and result types. `$indices::check` proved it, with these
                    // types, on the first instance of the component this table was made
                    // for (`ExportIndices::load` makes no table before that check passed),
                    // and a function's type is the component's, the same in every instance.
                    let typed = unsafe {
                        ::wasmtime::component::TypedFunc::<($($ty,)*), ($($ret,)?)>::new_unchecked(
                            func,
                        )
                    };
                    let out = typed.call(store, ($($arg,)*))?;
                    Ok(export_table!(@out out $($ret)?))
                }
            )*
        }
    };
    (@ret) => { () };
    (@ret $ret:ty) => { $ret };
    (@out $out:ident) => { $out };
    (@out $out:ident $ret:ty) => { $out.0 };
}
#[cfg(test)]
pub(crate) use export_table;

export_table! {
    /// The `sequencer` resource of the `sequencer-api` interface: its constructor and methods.
    SequencerResource, SequencerResourceIndices, interface "sequencer-api" {
        fn call_create = "[static]sequencer.create"(params: &Params)
            -> Result<ResourceAny, Error>;
        fn call_start = "[method]sequencer.start"(s: ResourceAny, kind: u16, ws: u64)
            -> Result<StartOutcome, Error>;
        fn call_start_status = "[method]sequencer.start-status"(s: ResourceAny, kind: u16, ws: u64)
            -> Result<(StartOutcome, Status), Error>;
        fn call_next = "[method]sequencer.next"(s: ResourceAny, seq: u16) -> Result<u64, Error>;
        fn call_flush = "[method]sequencer.flush"(s: ResourceAny) -> Result<(), Error>;
        fn call_flush_status = "[method]sequencer.flush-status"(s: ResourceAny)
            -> Result<Status, Error>;
        fn call_actualize = "[method]sequencer.actualize"(s: ResourceAny) -> Result<(), Error>;
        fn call_cleanup = "[method]sequencer.cleanup"(s: ResourceAny);
        fn call_status = "[method]sequencer.status"(s: ResourceAny) -> Status;
        fn call_held_numbers = "[method]sequencer.held-numbers"(s: ResourceAny) -> HeldNumbers;
        fn call_deliver = "[method]sequencer.deliver"(s: ResourceAny, op: u64, outcome: &Outcome)
            -> Result<(), Error>;
        fn call_pump = "[method]sequencer.pump"(s: ResourceAny);
        fn call_deliver_plog_words = "[method]sequencer.deliver-plog-words"(
            s: ResourceAny, op: u64, words: &[u64], next: u64, end: bool
        ) -> Result<(), Error>;
        fn call_start_next = "[method]sequencer.start-next"(
            s: ResourceAny, kind: u16, ws: u64, seqs: &[u16]
        ) -> Result<(StartOutcome, Vec<u64>), Error>;
        fn call_flush_start_next = "[method]sequencer.flush-start-next"(
            s: ResourceAny, kind: u16, ws: u64, seqs: &[u16]
        ) -> Result<(StartOutcome, Vec<u64>), Error>;
        fn call_start_next_quad = "[method]sequencer.start-next-quad"(
            s: ResourceAny, kind: u16, ws: u64, seqs: SeqQuad
        ) -> Result<QuadNumbers, Error>;
        fn call_flush_start_next_quad = "[method]sequencer.flush-start-next-quad"(
            s: ResourceAny, kind: u16, ws: u64, seqs: SeqQuad
        ) -> Result<QuadNumbers, Error>;
        fn call_stage = "[method]sequencer.stage"(s: ResourceAny) -> Result<(), Error>;
        fn call_start_batch = "[method]sequencer.start-batch"(
            s: ResourceAny, kind: u16, ws: &[u64], seqs: SeqQuad
        ) -> Result<BatchNumbers, Error>;
        fn call_flush_start_batch = "[method]sequencer.flush-start-batch"(
            s: ResourceAny, kind: u16, ws: &[u64], seqs: SeqQuad
        ) -> Result<BatchNumbers, Error>;
        fn call_start_ahead = "[method]sequencer.start-ahead"(
            s: ResourceAny, kind: u16, ws: u64, seqs: SeqQuad
        ) -> Result<AheadNumbers, Error>;
        fn call_take = "[method]sequencer.take"(s: ResourceAny, taken: SeqQuad)
            -> Result<(), Error>;
        fn call_take_next = "[method]sequencer.take-next"(s: ResourceAny, taken: SeqQuad, seq: u16)
            -> Result<u64, Error>;
        fn call_take_flush = "[method]sequencer.take-flush"(s: ResourceAny, taken: SeqQuad)
            -> Result<Status, Error>;
        fn call_take_flush_start_ahead = "[method]sequencer.take-flush-start-ahead"(
            s: ResourceAny, taken: SeqQuad, kind: u16, ws: u64, seqs: SeqQuad
        ) -> Result<AheadNumbers, Error>;
        fn call_actualize_beside_write = "[method]sequencer.actualize-beside-write"(s: ResourceAny)
            -> Result<(), Error>;
    }
}

export_table! {
    /// The `instance` interface: the resource's methods on the instance's one sequencer,
    /// without lending its handle, a refusal explained by `last-error`.
    InstanceFunctions, InstanceFunctionsIndices, interface "instance" {
        fn call_start = "start"(kind: u16, ws: u64) -> Result<StartOutcome, Refusal>;
        fn call_start_status = "start-status"(kind: u16, ws: u64)
            -> Result<(StartOutcome, Status), Refusal>;
        fn call_next = "next"(seq: u16) -> Result<u64, Refusal>;
        fn call_flush = "flush"() -> Result<(), Refusal>;
        fn call_flush_status = "flush-status"() -> Result<Status, Refusal>;
        fn call_actualize = "actualize"() -> Result<(), Refusal>;
        fn call_cleanup = "cleanup"();
        fn call_status = "status"() -> Status;
        fn call_held_numbers = "held-numbers"() -> HeldNumbers;
        fn call_deliver = "deliver"(op: u64, outcome: &Outcome) -> Result<(), Refusal>;
        fn call_pump = "pump"();
        fn call_deliver_plog_words = "deliver-plog-words"(
            op: u64, words: &[u64], next: u64, end: bool
        ) -> Result<(), Refusal>;
        fn call_start_next = "start-next"(kind: u16, ws: u64, seqs: &[u16])
            -> Result<(StartOutcome, Vec<u64>), Refusal>;
        fn call_flush_start_next = "flush-start-next"(kind: u16, ws: u64, seqs: &[u16])
            -> Result<(StartOutcome, Vec<u64>), Refusal>;
        fn call_start_next_quad = "start-next-quad"(kind: u16, ws: u64, seqs: SeqQuad)
            -> Result<QuadNumbers, Refusal>;
        fn call_flush_start_next_quad = "flush-start-next-quad"(kind: u16, ws: u64, seqs: SeqQuad)
            -> Result<QuadNumbers, Refusal>;
        fn call_stage = "stage"() -> Result<(), Refusal>;
        fn call_start_batch = "start-batch"(kind: u16, ws: &[u64], seqs: SeqQuad)
            -> Result<BatchNumbers, Refusal>;
        fn call_flush_start_batch = "flush-start-batch"(kind: u16, ws: &[u64], seqs: SeqQuad)
            -> Result<BatchNumbers, Refusal>;
        fn call_start_ahead = "start-ahead"(kind: u16, ws: u64, seqs: SeqQuad)
            -> Result<AheadNumbers, Refusal>;
        fn call_take = "take"(taken: SeqQuad) -> Result<(), Refusal>;
        fn call_take_next = "take-next"(taken: SeqQuad, seq: u16) -> Result<u64, Refusal>;
        fn call_take_flush = "take-flush"(taken: SeqQuad) -> Result<Status, Refusal>;
        fn call_take_flush_start_ahead = "take-flush-start-ahead"(
            taken: SeqQuad, kind: u16, ws: u64, seqs: SeqQuad
        ) -> Result<AheadNumbers, Refusal>;
        fn call_actualize_beside_write = "actualize-beside-write"() -> Result<(), Refusal>;
        fn call_last_error = "last-error"() -> Option<Error>;
    }
}

export_table! {
    /// The `events` interface: the numbers of one PLog event at a time.
    EventFunctions, EventFunctionsIndices, interface "events" {
        fn call_system_params = "system-params"(base: &Params) -> Params;
        fn call_start_event = "start-event"(s: ResourceAny, ws: u64) -> Result<EventStart, Error>;
        fn call_start_event_ahead = "start-event-ahead"(s: ResourceAny, ws: u64, seqs: SeqQuad)
            -> Result<EventAhead, Error>;
        fn call_take_flush_start_event_ahead = "take-flush-start-event-ahead"(
            s: ResourceAny, taken: SeqQuad, ws: u64, seqs: SeqQuad
        ) -> Result<EventAhead, Error>;
        fn call_next_rec_id = "next-rec-id"(s: ResourceAny) -> Result<u64, Error>;
        fn call_next_c_rec_id = "next-c-rec-id"(s: ResourceAny) -> Result<u64, Error>;
        fn call_finish_event = "finish-event"(s: ResourceAny) -> Result<(), Error>;
        fn call_cancel_event = "cancel-event"(s: ResourceAny) -> Result<(), Error>;
        fn call_status = "status"(s: ResourceAny) -> SequenceStatus;
    }
}

/// An instance's exports: the functions of the three interfaces the component exports, with
/// the accessors the generated bindings name them by.
#[derive(Clone)]
pub struct Exports {
    sequencer: SequencerResource,
    instance: InstanceFunctions,
    events: EventFunctions,
}

/// The `sequencer-api` interface: the `sequencer` resource.
#[derive(Clone, Copy)]
pub struct SequencerApi<'a>(&'a SequencerResource);

impl<'a> SequencerApi<'a> {
    /// The `sequencer` resource's constructor and methods.
    pub fn sequencer(&self) -> &'a SequencerResource {
        self.0
    }
}

impl Exports {
    /// The `sequencer-api` interface.
    pub fn sequencer_plugin_sequencer_api(&self) -> SequencerApi<'_> {
        SequencerApi(&self.sequencer)
    }

    /// The `instance` interface.
    pub fn sequencer_plugin_instance(&self) -> &InstanceFunctions {
        &self.instance
    }

    /// The `events` interface.
    pub fn sequencer_plugin_events(&self) -> &EventFunctions {
        &self.events
    }
}

/// Where a component's exports are, and whether their types were checked yet.
pub(crate) struct ExportIndices {
    sequencer: Arc<SequencerResourceIndices>,
    instance: Arc<InstanceFunctionsIndices>,
    events: Arc<EventFunctionsIndices>,
    /// Set once an instance of the component passed every table's type check.
    checked: AtomicBool,
}

impl ExportIndices {
    /// The indices of every table's functions in `component`; an error names the first
    /// function it does not export.
    pub(crate) fn new(component: &Component) -> wasmtime::Result<Self> {
        Ok(Self {
            sequencer: Arc::new(SequencerResourceIndices::new(component)?),
            instance: Arc::new(InstanceFunctionsIndices::new(component)?),
            events: Arc::new(EventFunctionsIndices::new(component)?),
            checked: AtomicBool::new(false),
        })
    }

    /// Whether an instance passed the type check yet.
    #[cfg(test)]
    pub(crate) fn checked(&self) -> bool {
        self.checked.load(Ordering::Acquire)
    }

    /// The exports of `instance`, an instance of the component these indices were made from.
    /// On the component's first instance every function's type is checked first (an error
    /// names the first that differs from its table); later instances skip the check.
    pub(crate) fn load<T: 'static>(
        &self, mut store: impl AsContextMut<Data = T>, instance: &Instance,
    ) -> wasmtime::Result<Exports> {
        let mut store = store.as_context_mut();
        if !self.checked.load(Ordering::Acquire) {
            self.sequencer.check(&mut store, instance)?;
            self.instance.check(&mut store, instance)?;
            self.events.check(&mut store, instance)?;
            self.checked.store(true, Ordering::Release);
        }
        Ok(Exports {
            sequencer: self.sequencer.table(instance),
            instance: self.instance.table(instance),
            events: self.events.table(instance),
        })
    }
}

/// The index of the exported interface `name` in `component`.
pub(crate) fn interface_index(
    component: &Component, name: &str,
) -> wasmtime::Result<ComponentExportIndex> {
    let full = format!("{PACKAGE}/{name}@{VERSION}");
    component
        .get_export_index(None, &full)
        .ok_or_else(|| wasmtime::format_err!("the component exports no interface `{full}`"))
}

/// The index of function `name` in the exported interface `iface` (at `interface`).
pub(crate) fn function_index(
    component: &Component, interface: &ComponentExportIndex, iface: &str, name: &str,
) -> wasmtime::Result<ComponentExportIndex> {
    component
        .get_export_index(Some(interface), name)
        .ok_or_else(|| wasmtime::format_err!("the component's `{iface}` exports no `{name}`"))
}

/// The function at `index` in `instance`, looked up on its first call and kept in `cell` (out
/// of line, so that every later call is a load and a branch).
#[cold]
#[inline(never)]
pub(crate) fn first_call<T: 'static>(
    store: &mut StoreContextMut<'_, T>, instance: &Instance, cell: &Cell<Option<Func>>,
    index: &ComponentExportIndex, iface: &str, name: &str,
) -> wasmtime::Result<Func> {
    let func = instance.get_func(&mut *store, index).ok_or_else(|| {
        wasmtime::format_err!("the component's `{iface}` export `{name}` is not a function")
    })?;
    cell.set(Some(func));
    Ok(func)
}

/// The context of a type check's error: which function differs from its table.
pub(crate) fn mismatch(iface: &str, name: &str) -> String {
    format!(
        "the component's `{iface}` export `{name}` does not have the type the host calls it with"
    )
}
