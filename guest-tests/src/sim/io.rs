//! What the guest's imports see during one call (the simulator's storage, clock and numbers
//! reads) and what the guest asked of them, shared by both engines: the component's imports and
//! the native shell's [`Host`] are this one [`Io`].

use sequencer::shell::{Host, Read};
use sequencer::{Instant, Status, Work};

use super::storage::SimStorage;

/// What the guest's imports see during one call, and what the guest asked of them.
///
/// The simulator owns it; an engine borrows it for a call (the component engine moves it into
/// its store for the duration of the call), so both engines see exactly the same world.
#[derive(Debug, Default)]
pub struct Io {
    /// The clock's reading for the whole call (`clock.now`).
    pub now: u64,
    /// The partition's storage (only `read-numbers` touches it during a call, and only reads).
    pub storage: SimStorage,
    /// How `read-numbers` answers during the call.
    pub numbers: NumbersAnswer,
    /// What the guest asked of its host, in order.
    pub effects: Vec<Effect>,
}

/// How the `read-numbers` and `read-numbers-many` imports answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum NumbersAnswer {
    /// From the storage view.
    #[default]
    FromStorage,
    /// Both fail with this error.
    Fail(String),
    /// `read-numbers-many` fails with this error; `read-numbers` answers from the view.
    FailMany(String),
    /// `read-numbers-many` answers one number short; `read-numbers` answers from the view.
    ShortMany,
    /// With exactly these numbers, however many were asked for (fuzzing only).
    Fixed(Vec<u64>),
}

impl Io {
    /// The `read-numbers` import.
    pub fn read_numbers(&mut self, ws: u64, seqs: &[u16]) -> Result<Vec<u64>, String> {
        self.effects.push(Effect::ReadNumbers {
            ws,
            seqs: seqs.to_vec(),
        });
        match &self.numbers {
            NumbersAnswer::Fail(m) => Err(m.clone()),
            NumbersAnswer::Fixed(n) => Ok(n.clone()),
            _ if self.storage.down() => Err("storage is down".into()),
            _ => Ok(self.storage.mem.read_numbers(ws, seqs)),
        }
    }

    /// The `read-numbers-many` import: `seqs.len()` numbers per workspace of `ws`.
    pub fn read_numbers_many(&mut self, ws: &[u64], seqs: &[u16]) -> Result<Vec<u64>, String> {
        self.effects.push(Effect::ReadNumbersMany {
            ws: ws.to_vec(),
            seqs: seqs.to_vec(),
        });
        match &self.numbers {
            NumbersAnswer::Fail(m) | NumbersAnswer::FailMany(m) => Err(m.clone()),
            NumbersAnswer::Fixed(n) => Ok(n.clone()),
            _ if self.storage.down() => Err("storage is down".into()),
            answer => {
                let mut out: Vec<u64> = ws
                    .iter()
                    .flat_map(|&w| self.storage.mem.read_numbers(w, seqs))
                    .collect();
                if *answer == NumbersAnswer::ShortMany {
                    out.pop();
                }
                Ok(out)
            }
        }
    }
}

/// Something the guest asked of its host during a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// `read-numbers` (answered during the call).
    ReadNumbers {
        /// The workspace.
        ws: u64,
        /// The sequences, in the order asked.
        seqs: Vec<u16>,
    },
    /// `read-numbers-many` (answered during the call).
    ReadNumbersMany {
        /// The workspaces, in the order asked.
        ws: Vec<u64>,
        /// The sequences, in the order asked.
        seqs: Vec<u16>,
    },
    /// A storage operation to perform and report with `deliver` (a write's values sorted:
    /// their order carries no meaning and comes from a hash map whose order differs between
    /// native code and the component).
    Begin(Work),
    /// `set-wake`: pump at this time (`None`: never).
    SetWake(Option<u64>),
    /// `status-changed`: the status is now this.
    Status(Status),
}

/// What the component's imports do, for the shell: answer numbers reads from the simulated
/// storage and record everything the guest asks of its host.
impl Host for Io {
    fn now(&mut self) -> Instant {
        Instant::from_nanos(self.now)
    }

    fn read_numbers(&mut self, ws: u64, seqs: &[u16]) -> Read {
        match Io::read_numbers(self, ws, seqs) {
            Ok(numbers) => Read::Numbers(numbers),
            Err(message) => Read::Failed(message),
        }
    }

    fn read_numbers_many(&mut self, ws: &[u64], seqs: &[u16]) -> Read {
        match Io::read_numbers_many(self, ws, seqs) {
            Ok(numbers) => Read::Numbers(numbers),
            Err(message) => Read::Failed(message),
        }
    }

    fn begin(&mut self, mut work: Work) {
        if let Work::Write(w) = &mut work {
            w.values.sort_by_key(|v| (v.key, v.value));
        }
        self.effects.push(Effect::Begin(work));
    }

    fn set_wake(&mut self, at: Option<Instant>) {
        self.effects
            .push(Effect::SetWake(at.map(Instant::as_nanos)));
    }

    fn status_changed(&mut self, status: Status) {
        self.effects.push(Effect::Status(status));
    }
}
