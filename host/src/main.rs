//! `sequencer-host`: runs the sequencer component under wasmtime.
fn main() {
    eprintln!("sequencer-host: the main job arrives with the durable storage; see README.md");
    std::process::exit(2);
}
