//! The construction parameters as a JavaScript class, filled by setters that refuse out of
//! range arguments with a coded error instead of throwing.

use wasm_bindgen::prelude::*;

use super::convert::{code, duration, message, to_u16, to_u64};
use crate::{Error, Params, facade};

/// Construction parameters, filled by setters and checked by `validate`.
///
/// Setters return `false` for an argument out of range (see `errorCode` / `errorMessage`).
#[wasm_bindgen(js_name = CoreParams)]
pub struct CoreParams {
    inner: Params,
    error: Option<Error>,
}

impl Default for CoreParams {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen(js_class = CoreParams)]
impl CoreParams {
    /// Default limits, no sequences yet.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Self {
        Self {
            inner: Params::new(),
            error: None,
        }
    }

    /// Adds sequence `seq` to workspace kind `kind`, handing out `initial` first.
    #[wasm_bindgen(js_name = addSeq)]
    pub fn add_seq(&mut self, kind: f64, seq: f64, initial: f64) -> bool {
        let r = (|| {
            let kind = to_u16("workspace kind", kind)?;
            let seq = to_u16("sequence id", seq)?;
            let initial = to_u64("initial value", initial)?;
            let params = core::mem::take(&mut self.inner);
            self.inner = params.with_seq(kind, seq, initial);
            Ok(())
        })();
        self.record(r)
    }

    /// Adds the facade's system sequences to workspace kind 0 (`facade::system_params`),
    /// replacing those ids.
    #[wasm_bindgen(js_name = addSystemSequences)]
    pub fn add_system_sequences(&mut self) {
        self.inner = facade::system_params(core::mem::take(&mut self.inner));
    }

    /// The sequences as flat triples `[kind, seq, initial, ...]`, sorted.
    #[wasm_bindgen(js_name = seqTypes)]
    pub fn seq_types(&self) -> Vec<f64> {
        let mut all: Vec<(u16, u16, u64)> = self
            .inner
            .seq_types
            .iter()
            .flat_map(|(&k, seqs)| seqs.iter().map(move |(&s, &i)| (k, s, i)))
            .collect();
        all.sort_unstable();
        all.iter()
            .flat_map(|&(k, s, i)| [f64::from(k), f64::from(s), i as f64])
            .collect()
    }

    /// Sets the number of unflushed values above which `start` says "not now".
    #[wasm_bindgen(js_name = setMaxUnflushedValues)]
    pub fn set_max_unflushed_values(&mut self, n: f64) -> bool {
        let r = to_u64("maxUnflushedValues", n).map(|n| {
            self.inner.max_unflushed_values = usize::try_from(n).unwrap_or(usize::MAX);
        });
        self.record(r)
    }

    /// Sets how many numbers the LRU cache keeps.
    #[wasm_bindgen(js_name = setLruCacheSize)]
    pub fn set_lru_cache_size(&mut self, n: f64) -> bool {
        let r = to_u64("lruCacheSize", n).map(|n| {
            self.inner.lru_cache_size = usize::try_from(n).unwrap_or(usize::MAX);
        });
        self.record(r)
    }

    /// Sets how often replay held back by unflushed values looks again, in milliseconds.
    #[wasm_bindgen(js_name = setBatcherDelayMs)]
    pub fn set_batcher_delay_ms(&mut self, ms: f64) -> bool {
        let r = duration("batcherDelayOnOverflowMs", ms).map(|d| {
            self.inner.batcher_delay_on_overflow = d;
        });
        self.record(r)
    }

    /// Sets the retry delays in milliseconds: `first` after the first failure, doubling up to
    /// `max`.
    #[wasm_bindgen(js_name = setRetryDelayMs)]
    pub fn set_retry_delay_ms(&mut self, first: f64, max: f64) -> bool {
        let r = (|| {
            self.inner.retry_delay = duration("retryDelayMs", first)?;
            self.inner.max_retry_delay = duration("maxRetryDelayMs", max)?;
            Ok(())
        })();
        self.record(r)
    }

    /// Sets how much of each retry wait is drawn away at random, in percent (0..=100).
    #[wasm_bindgen(js_name = setRetryJitterPercent)]
    pub fn set_retry_jitter_percent(&mut self, percent: f64) -> bool {
        let r = to_u16("retryJitterPercent", percent).map(|p| {
            self.inner.retry_jitter_percent = u8::try_from(p).unwrap_or(u8::MAX);
        });
        self.record(r)
    }

    /// Checks the params as a sequencer would; `false` with code `INVALID_PARAMS` if invalid.
    pub fn validate(&mut self) -> bool {
        let r = self.inner.validate().map_err(Error::from);
        self.record(r)
    }

    /// The code of the last refusal (`""` if none).
    #[wasm_bindgen(js_name = errorCode)]
    pub fn error_code(&self) -> String {
        code(&self.error)
    }

    /// The message of the last refusal (`""` if none).
    #[wasm_bindgen(js_name = errorMessage)]
    pub fn error_message(&self) -> String {
        message(&self.error)
    }

    /// The params as filled so far.
    pub(super) fn params(&self) -> &Params {
        &self.inner
    }

    fn record(&mut self, r: Result<(), Error>) -> bool {
        match r {
            Ok(()) => true,
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }
}
