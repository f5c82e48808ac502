//! What to simulate: the engine, the step budget and the storage, from code or from the
//! environment (`SIM_STEPS`, `SIM_ENGINE`, `SIM_BROKEN`), and the command that replays a seed.

use super::engine::EngineKind;

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The engine to drive.
    pub engine: EngineKind,
    /// Scheduler steps per seed (settling comes on top).
    pub steps: usize,
    /// Use the deliberately broken storage that writes the offset before the values.
    pub offset_first: bool,
    /// End each run by settling without faults and checking that everything reached storage.
    pub settle: bool,
}

impl SimConfig {
    /// Steps per seed unless `SIM_STEPS` says otherwise.
    pub const DEFAULT_STEPS: usize = 300;

    /// Defaults for `engine`: [`Self::DEFAULT_STEPS`] steps, correct storage, settling.
    pub fn new(engine: EngineKind) -> Self {
        Self {
            engine,
            steps: Self::DEFAULT_STEPS,
            offset_first: false,
            settle: true,
        }
    }

    /// Applies `SIM_STEPS`, `SIM_ENGINE` (`native`, `component`, `both`) and
    /// `SIM_BROKEN=offset-first` from the environment.
    pub fn from_env(mut self) -> Self {
        if let Some(steps) = env_u64("SIM_STEPS") {
            self.steps = steps as usize;
        }
        if let Some(engine) = std::env::var("SIM_ENGINE")
            .ok()
            .and_then(|e| EngineKind::parse(&e))
        {
            self.engine = engine;
        }
        if std::env::var("SIM_BROKEN").is_ok_and(|b| b == "offset-first") {
            self.offset_first = true;
        }
        self
    }

    /// The shell command that replays `seed` under this configuration.
    pub fn replay_command(&self, seed: u64) -> String {
        let engine = match self.engine {
            EngineKind::Native => "native",
            EngineKind::Component => "component",
            EngineKind::Both => "both",
        };
        let broken = if self.offset_first {
            " SIM_BROKEN=offset-first"
        } else {
            ""
        };
        format!(
            "SIM_SEED={seed} SIM_ENGINE={engine} SIM_STEPS={}{broken} cargo test -p sequencer-guest-tests --test simulation replay_sim_seed -- --nocapture",
            self.steps
        )
    }
}

/// Reads a number from the environment (`_` separators allowed).
pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()?
        .replace('_', "")
        .trim()
        .parse()
        .ok()
}
