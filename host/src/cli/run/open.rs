//! The step that opens a run: the options validated, the component loaded, the store opened
//! (or created) through the library, the numbers read ahead; shared by `run` over every
//! partition and by `run --host-name`.

use std::sync::Arc;
use std::time::Instant;

use sequencer_host::store::layers::ReadAhead;
use sequencer_host::store::live::LiveServer;
use sequencer_host::store::{OpenError, Store, open};
use sequencer_host::{Runtime, Storage};

use super::super::common::{CliError, CliResult, explain_open};
use super::super::component;
use super::args::RunArgs;

/// A run's store and component, opened after every option and the recorded layout were
/// validated (nothing is written before).
pub(super) struct Opened {
    /// `check` and `inspect` served beside this run (dropped first: its socket goes away
    /// before the store closes).
    pub(super) _readers: Option<LiveServer>,
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
    let read_ahead = Arc::new(ReadAhead::new(store.storage()));
    let storage: Arc<dyn Storage> = read_ahead.clone();
    Ok(Opened {
        _readers: readers,
        store,
        runtime,
        read_ahead,
        storage,
    })
}
