//! The step that opens a run: the options validated, the component loaded, the store opened
//! (or created) through the library, the numbers read ahead, the metrics served (`--metrics`);
//! shared by `run` over every partition and by `run --host-name`.

use std::sync::Arc;
use std::time::Instant;

use sequencer_host::metrics::Metrics;
use sequencer_host::store::layers::ReadAhead;
use sequencer_host::store::live::LiveServer;
use sequencer_host::store::{OpenError, Store, open};
use sequencer_host::{Runtime, Storage};

use super::super::common::{CliError, CliResult, explain_open};
use super::super::component;
use super::args::RunArgs;
use super::endpoint::{Endpoint, serve};

/// A run's store and component, opened after every option and the recorded layout were
/// validated (nothing is written before).
pub(super) struct Opened {
    /// `--metrics`: the HTTP endpoint (dropped first).
    pub(super) _endpoint: Option<Endpoint>,
    /// `check` and `inspect` served beside this run (dropped before the store: its socket
    /// goes away before the store closes).
    pub(super) _readers: Option<LiveServer>,
    /// The host's metrics (`--metrics`), which the store's layer and the driver record into.
    pub(super) metrics: Option<Metrics>,
    pub(super) store: Store,
    pub(super) runtime: Runtime,
    /// The storage as the driver and the command processors see it: the store behind the
    /// read-ahead of numbers.
    pub(super) read_ahead: Arc<ReadAhead>,
    pub(super) storage: Arc<dyn Storage>,
}

/// The step that opens: validates the options, loads the component, opens (or creates) the
/// store through the library, which validates the recorded layout and archive first.
pub(super) fn open_store(args: &RunArgs) -> CliResult<Opened> {
    args.validate()?;
    let loading = Instant::now();
    let runtime = component::load(&args.component, sequencer_host::Limits::default())?;
    tracing::debug!(
        "loaded {} in {:.2} s",
        args.component.describe(),
        loading.elapsed().as_secs_f64()
    );
    let store = open(&args.store.0, &args.open_options()).map_err(|e| match e {
        OpenError::EventTooLarge { .. } => {
            CliError(format!("--payload-bytes {}: {e}", args.payload_bytes))
        }
        other => explain_open(other),
    })?;
    let readers = store.serve_readers().unwrap_or_else(|e| {
        tracing::warn!("{e}: check and inspect beside this run will read a private copy");
        None
    });
    let metrics = args.metrics.map(|_| Metrics::new());
    // Not ready before the partitions are opened (`recover`, `run_member`).
    metrics.iter().for_each(|m| m.set_opening(true));
    let under = match &metrics {
        Some(m) => {
            m.watch_store_stats(store.stats_source());
            m.storage(store.storage())
        }
        None => store.storage(),
    };
    let endpoint = match (args.metrics, &metrics) {
        (Some(addr), Some(m)) => Some(serve(addr, m.clone())?),
        _ => None,
    };
    let read_ahead = Arc::new(ReadAhead::new(under));
    let storage: Arc<dyn Storage> = read_ahead.clone();
    Ok(Opened {
        _endpoint: endpoint,
        metrics,
        _readers: readers,
        store,
        runtime,
        read_ahead,
        storage,
    })
}
