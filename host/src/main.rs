//! `sequencer-host`: runs the sequencer component under wasmtime.
//!
//! - `run`: a command-processor workload over many partitions and workspaces against a durable
//!   data directory (or memory), with progress bars and a summary table; on an existing
//!   directory it first actualizes from the last flushed offset, then continues.
//! - `inspect`: a partition's PLog tail and sequences view.
//! - `check`: proves every partition's PLog and view consistent (dense offsets, no number
//!   issued twice); exits non-zero on the first violation.
//!
//! Errors are one line on stderr, naming what failed and where; the exit code is then 1.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse_args();
    let progress = cli::logging::init(&args.output);
    match cli::dispatch(args, &progress) {
        Ok(code) => code,
        Err(e) => {
            progress.clear_for_exit();
            eprintln!("sequencer-host: error: {}", cli::one_line(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}
