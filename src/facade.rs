//! The `ISequence` facade (docs/DESIGN.md §5): what a command processor thinks in (start an event,
//! take record ids, finish or cancel it), over the generic sequencer and the platform's system
//! sequences. Also the storage adapter's half: turning a PLog event into sequence values.

use crate::error::Error;
use crate::params::Params;
use crate::sequencer::{Sequencer, Status};
use crate::types::{Number, PLogOffset, SeqId, SeqValue, WsId, WsKind};

/// The workspace kind the facade's system sequences belong to.
pub const SYSTEM_KIND: WsKind = 0;
/// The WLog offset of a workspace.
pub const SEQ_WLOG_OFFSET: SeqId = 1;
/// Ids of O/W documents and records, and of argument objects.
pub const SEQ_REC_ID: SeqId = 2;
/// Ids of C documents and records.
pub const SEQ_CREC_ID: SeqId = 3;

/// The first WLog offset of a workspace.
pub const FIRST_WLOG_OFFSET: Number = 1;
/// The register factor of the platform's record ids: `id = register × factor + base id`.
pub const REGISTER_FACTOR: Number = 5_000_000_000;
/// The first base record id handed to users.
pub const FIRST_USER_BASE_RECORD_ID: Number = 131_072;
/// The first O/W record id: register 64536.
pub const FIRST_REC_ID: Number = 64_536 * REGISTER_FACTOR + FIRST_USER_BASE_RECORD_ID;
/// The first C record id: register 64537.
pub const FIRST_CREC_ID: Number = 64_537 * REGISTER_FACTOR + FIRST_USER_BASE_RECORD_ID;

/// `params` with the system sequences added under [`SYSTEM_KIND`] (its limits kept).
pub fn system_params(params: Params) -> Params {
    params
        .with_seq(SYSTEM_KIND, SEQ_WLOG_OFFSET, FIRST_WLOG_OFFSET)
        .with_seq(SYSTEM_KIND, SEQ_REC_ID, FIRST_REC_ID)
        .with_seq(SYSTEM_KIND, SEQ_CREC_ID, FIRST_CREC_ID)
}

/// The status of the `ISequence` facade (docs/DESIGN.md §5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SequenceStatus {
    /// Not created yet.
    None = 0,
    /// Recovering from the sequences view and the PLog.
    Recover = 1,
    /// Ready for an event.
    Ready = 2,
    /// An event is in progress.
    Eventing = 3,
    /// Stopped.
    Finished = 4,
}

impl From<Status> for SequenceStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Actualizing => Self::Recover,
            Status::Ready => Self::Ready,
            Status::InTransaction => Self::Eventing,
            Status::CleanedUp => Self::Finished,
        }
    }
}

impl SequenceStatus {
    /// The status stored as `repr(u8)`; unknown values read as `None`.
    pub fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Recover,
            2 => Self::Ready,
            3 => Self::Eventing,
            4 => Self::Finished,
            _ => Self::None,
        }
    }
}

/// The offsets of an event that began (the facade's `StartEvent`, docs/DESIGN.md §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventOffsets {
    /// The PLog offset of the event.
    pub plog_offset: PLogOffset,
    /// The WLog offset of the event in its workspace.
    pub wlog_offset: Number,
}

impl Sequencer {
    /// `NextRecID`: the next O/W document or record id of the event's workspace.
    pub fn next_rec_id(&mut self) -> Result<Number, Error> {
        self.next(SEQ_REC_ID)
    }

    /// `NextCRecID`: the next C document or record id of the event's workspace.
    pub fn next_c_rec_id(&mut self) -> Result<Number, Error> {
        self.next(SEQ_CREC_ID)
    }

    /// The facade's `Status` (docs/DESIGN.md §5.3).
    pub fn sequence_status(&self) -> SequenceStatus {
        self.status().into()
    }
}

/// The kind of a record an event creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// A C document.
    CDoc,
    /// A C record.
    CRecord,
    /// An O document.
    ODoc,
    /// An O record.
    ORecord,
    /// A W document.
    WDoc,
    /// A W record.
    WRecord,
}

impl RecordKind {
    /// Every kind, with its name.
    const NAMES: [(RecordKind, &'static str); 6] = [
        (RecordKind::CDoc, "CDoc"),
        (RecordKind::CRecord, "CRecord"),
        (RecordKind::ODoc, "ODoc"),
        (RecordKind::ORecord, "ORecord"),
        (RecordKind::WDoc, "WDoc"),
        (RecordKind::WRecord, "WRecord"),
    ];

    /// The kind named `name` (`"CDoc"`, `"CRecord"`, `"ODoc"`, `"ORecord"`, `"WDoc"`,
    /// `"WRecord"`).
    pub fn parse(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(kind, _)| *kind)
    }

    /// The sequence a record of this kind raises in recovery: C documents and records the C
    /// record id, the others the record id.
    pub fn seq(self) -> SeqId {
        match self {
            RecordKind::CDoc | RecordKind::CRecord => SEQ_CREC_ID,
            RecordKind::ODoc | RecordKind::ORecord | RecordKind::WDoc | RecordKind::WRecord => {
                SEQ_REC_ID
            }
        }
    }
}

/// An object of an event's argument, with its children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgObject {
    /// The object's id.
    pub id: Number,
    /// Its child objects.
    pub children: Vec<ArgObject>,
}

/// What recovery needs of a platform PLog event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformEvent {
    /// The workspace.
    pub ws: WsId,
    /// The event's WLog offset in that workspace.
    pub wlog_offset: Number,
    /// The records the event creates: kind and id.
    pub new_records: Vec<(RecordKind, Number)>,
    /// The argument object, if any.
    pub argument: Option<ArgObject>,
}

/// The sequence values an event carries, as the facade's recovery reads them (docs/DESIGN.md §5.4):
/// its WLog offset; C documents and records raise the C record id; O/W documents and records raise
/// the record id; argument objects and their children raise the record id. Keys may repeat.
pub fn event_values(event: &PlatformEvent) -> Vec<SeqValue> {
    let ws = event.ws;
    let mut values = vec![SeqValue::new(ws, SEQ_WLOG_OFFSET, event.wlog_offset)];
    for &(kind, id) in &event.new_records {
        values.push(SeqValue::new(ws, kind.seq(), id));
    }
    let mut stack: Vec<&ArgObject> = event.argument.iter().collect();
    while let Some(obj) = stack.pop() {
        values.push(SeqValue::new(ws, SEQ_REC_ID, obj.id));
        stack.extend(obj.children.iter());
    }
    values
}
