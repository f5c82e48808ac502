//! The host crate carries its own copies of files that live at the top of the repository, so
//! that the published crate is complete inside its package: the component contract
//! (`host/wit/`, which its bindings are compiled from) and the licence. The top-level files are
//! the source of truth; these tests fail as soon as a copy differs.

fn assert_copy(top: &str, copy: &str) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let Ok(source) = std::fs::read_to_string(format!("{dir}/../{top}")) else {
        // A packaged crate has no repository around it: nothing to compare.
        return;
    };
    let copied = std::fs::read_to_string(format!("{dir}/{copy}")).expect("the copy exists");
    assert!(
        source == copied,
        "host/{copy} differs from {top}: copy it again (cp {top} host/{copy})"
    );
}

#[test]
fn the_host_crates_wit_is_a_copy_of_the_top_level_wit() {
    assert_copy("wit/sequencer.wit", "wit/sequencer.wit");
}

#[test]
fn the_host_crates_licence_is_a_copy_of_the_top_level_licence() {
    assert_copy("LICENSE", "LICENSE");
}
