//! The vocabulary the JavaScript driver takes its names and constants from (and checks its
//! own classes against): the core's tables, exported as arrays.

use wasm_bindgen::prelude::*;

use crate::{ErrorKind, Status, facade};

/// Every error code, in the core's table order (the driver checks its classes against it).
#[wasm_bindgen(js_name = errorCodes)]
pub fn error_codes() -> Vec<String> {
    ErrorKind::ALL.iter().map(|k| k.code().to_owned()).collect()
}

/// The WIT case of each error code of [`error_codes`], in the same order (`""` for a code the
/// WIT does not have).
#[wasm_bindgen(js_name = errorWitCases)]
pub fn error_wit_cases() -> Vec<String> {
    ErrorKind::ALL
        .iter()
        .map(|k| k.wit_case().unwrap_or_default().to_owned())
        .collect()
}

/// The package's status names by [`CoreStatus`](super::CoreStatus) value.
#[wasm_bindgen(js_name = statusNames)]
pub fn status_names() -> Vec<String> {
    Status::ALL.iter().map(|s| s.js_name().to_owned()).collect()
}

/// The WIT's status names by [`CoreStatus`](super::CoreStatus) value.
#[wasm_bindgen(js_name = witStatusNames)]
pub fn wit_status_names() -> Vec<String> {
    Status::ALL
        .iter()
        .map(|s| s.wit_name().to_owned())
        .collect()
}

/// The facade's sequence status names by `sequenceStatus()` value.
#[wasm_bindgen(js_name = sequenceStatusNames)]
pub fn sequence_status_names() -> Vec<String> {
    facade::SequenceStatus::ALL
        .iter()
        .map(|s| s.wit_name().to_owned())
        .collect()
}

/// The facade's constants: `[SYSTEM_KIND, SEQ_WLOG_OFFSET, SEQ_REC_ID, SEQ_CREC_ID,
/// FIRST_WLOG_OFFSET, REGISTER_FACTOR, FIRST_USER_BASE_RECORD_ID, FIRST_REC_ID, FIRST_CREC_ID]`.
#[wasm_bindgen(js_name = facadeConstants)]
pub fn facade_constants() -> Vec<f64> {
    [
        u64::from(facade::SYSTEM_KIND),
        u64::from(facade::SEQ_WLOG_OFFSET),
        u64::from(facade::SEQ_REC_ID),
        u64::from(facade::SEQ_CREC_ID),
        facade::FIRST_WLOG_OFFSET,
        facade::REGISTER_FACTOR,
        facade::FIRST_USER_BASE_RECORD_ID,
        facade::FIRST_REC_ID,
        facade::FIRST_CREC_ID,
    ]
    .iter()
    .map(|&n| n as f64)
    .collect()
}

/// The sequence a record of kind `kind` (`'CDoc'`, `'CRecord'`, `'ODoc'`, `'ORecord'`,
/// `'WDoc'`, `'WRecord'`) raises in recovery (`facade::RecordKind`), or -1 for an unknown kind.
#[wasm_bindgen(js_name = recordSeq)]
pub fn record_seq(kind: &str) -> i32 {
    facade::RecordKind::parse(kind).map_or(-1, |k| i32::from(k.seq()))
}
