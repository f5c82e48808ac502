//! What the component asks of a host: exactly these imports.

use sequencer_guest_tests::runtime;

#[test]
fn the_component_imports_only_its_own_interfaces_and_what_std_forces() {
    let imports = runtime().imports().to_vec();
    let ours: Vec<&str> = imports
        .iter()
        .map(String::as_str)
        .filter(|i| i.starts_with("sequencer:"))
        .collect();
    assert_eq!(
        ours,
        [
            "sequencer:plugin/clock@0.3.0",
            "sequencer:plugin/observer@0.3.0",
            "sequencer:plugin/storage@0.3.0",
            "sequencer:plugin/types@0.3.0"
        ]
    );
    let wasi: Vec<&str> = imports
        .iter()
        .map(String::as_str)
        .filter(|i| !i.starts_with("sequencer:"))
        .collect();
    println!("WASI imports: {wasi:?}");
    // What std's wasm32-wasip2 runtime imports; the host traps any call into them
    // (`define_unknown_imports_as_traps`).
    let std_imports: Vec<&str> = include_str!("../std-imports.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(!std_imports.is_empty());
    for i in &wasi {
        assert!(
            std_imports.iter().any(|p| i.starts_with(p)),
            "unexpected import {i}: only std's ({std_imports:?}) are expected"
        );
    }
}

/// The stack pointer's start and the initial memory pages of the component's core module that
/// defines its linear memory.
fn stack_and_memory(component: &[u8]) -> (i32, u64) {
    let mut stack = None;
    let mut pages = None;
    for payload in wasmparser::Parser::new(0).parse_all(component) {
        match payload.expect("a valid component") {
            wasmparser::Payload::MemorySection(memories) if pages.is_none() => {
                pages = memories
                    .into_iter()
                    .next()
                    .map(|m| m.expect("a memory").initial);
            }
            // The first global of the module with the memory: wasm-ld's `__stack_pointer`.
            wasmparser::Payload::GlobalSection(globals) if pages.is_some() && stack.is_none() => {
                let global = globals
                    .into_iter()
                    .next()
                    .expect("a global")
                    .expect("valid");
                let mut ops = global.init_expr.get_operators_reader();
                if let wasmparser::Operator::I32Const { value } = ops.read().expect("an operator") {
                    stack = Some(value);
                }
            }
            _ => {}
        }
    }
    (
        stack.expect("a stack pointer"),
        pages.expect("a linear memory"),
    )
}

/// The pages every instance writes (the top of its stack, its data, the start of its heap) lie
/// in the lowest 64 KiB, which a pooled slot keeps resident and resets in place: a stack of
/// 32 KiB (build.rs), not the linker's 1 MiB, which would put them a megabyte up.
#[test]
fn the_component_stack_is_small_and_at_the_bottom_of_memory() {
    let bytes = std::fs::read(sequencer_guest_tests::component_path()).expect("the component");
    let (stack, pages) = stack_and_memory(&bytes);
    assert_eq!(
        stack,
        32 << 10,
        "the stack pointer starts at the stack's top"
    );
    assert_eq!(
        pages, 1,
        "stack, data and the first heap page fit in one 64 KiB page"
    );
}
