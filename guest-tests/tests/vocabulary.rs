//! One vocabulary: the WIT's cases are the core's tables (`sequencer::ErrorKind`, and the
//! `ALL`/`wit_name` of the status enums). A case added to the WIT and not the core, or the
//! other way round, fails here; the glue's conversions are exhaustive matches the compiler
//! checks. (The JavaScript side: `js/test/vocabulary.test.js`.)

use std::collections::BTreeSet;

use sequencer::facade::SequenceStatus;
use sequencer::{ErrorKind, NotNowReason, Status};

/// The case names of `variant NAME` or `enum NAME` in the WIT, in order.
fn wit_cases(keyword: &str, name: &str) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../wit/sequencer.wit");
    let wit = std::fs::read_to_string(path).expect("read the WIT");
    let head = format!("{keyword} {name} {{");
    let start = wit
        .find(&head)
        .unwrap_or_else(|| panic!("the WIT has no `{head}`"))
        + head.len();
    let body = &wit[start..start + wit[start..].find('}').expect("the closing brace")];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .map(|l| {
            l.split(['(', ','])
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned()
        })
        .collect()
}

#[test]
fn every_case_of_the_wit_error_variant_is_a_row_of_the_core_table_and_back() {
    let wit: BTreeSet<String> = wit_cases("variant", "error").into_iter().collect();
    let core: BTreeSet<String> = ErrorKind::ALL
        .iter()
        .filter_map(|k| k.wit_case())
        .map(str::to_owned)
        .collect();
    assert_eq!(
        wit, core,
        "the WIT's error cases and the core's ErrorKind table differ"
    );
    let codes: BTreeSet<&str> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
    assert_eq!(codes.len(), ErrorKind::ALL.len(), "codes are unique");
}

#[test]
fn the_wit_refusal_enum_is_the_error_variant_without_payloads_case_for_case() {
    assert_eq!(
        wit_cases("enum", "refusal"),
        wit_cases("variant", "error"),
        "an `instance` refusal names its error's case"
    );
}

#[test]
fn the_wit_status_enums_are_the_core_enums_in_order() {
    let names = |all: Vec<&str>| all.into_iter().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        wit_cases("enum", "status"),
        names(Status::ALL.iter().map(|s| s.wit_name()).collect())
    );
    assert_eq!(
        wit_cases("enum", "not-now-reason"),
        names(NotNowReason::ALL.iter().map(|s| s.wit_name()).collect())
    );
    assert_eq!(
        wit_cases("enum", "sequence-status"),
        names(SequenceStatus::ALL.iter().map(|s| s.wit_name()).collect())
    );
}
