//! Logs to stderr through `tracing`, drawn above the progress bars rather than through them.

use std::io::{self, Write};

use indicatif::{MultiProgress, ProgressDrawTarget};
use tracing::level_filters::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;

use super::Cli;

/// The progress bars of the process (hidden with `--no-progress` or when stderr is not a
/// terminal) and the log writer that draws around them.
#[derive(Clone)]
pub struct Progress {
    /// Every bar is added here.
    pub multi: MultiProgress,
}

impl Progress {
    /// Removes the bars from the screen before a final message.
    pub fn clear_for_exit(&self) {
        let _ = self.multi.clear();
    }
}

/// Sets up logging (`-v` debug, `-q` warnings only, default info) and the progress bars.
pub fn init(cli: &Cli) -> Progress {
    let multi = if cli.no_progress {
        MultiProgress::with_draw_target(ProgressDrawTarget::hidden())
    } else {
        MultiProgress::with_draw_target(ProgressDrawTarget::stderr())
    };
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => LevelFilter::WARN,
        (false, 0) => LevelFilter::INFO,
        (false, 1) => LevelFilter::DEBUG,
        (false, _) => LevelFilter::TRACE,
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(BarWriters(multi.clone()))
        .with_max_level(level)
        .with_target(false)
        .with_ansi(io::IsTerminal::is_terminal(&io::stderr()))
        .try_init();
    Progress { multi }
}

struct BarWriters(MultiProgress);

/// Writes one log record to stderr with the bars suspended.
struct BarWriter(MultiProgress);

impl<'a> MakeWriter<'a> for BarWriters {
    type Writer = BarWriter;

    fn make_writer(&'a self) -> Self::Writer {
        BarWriter(self.0.clone())
    }
}

impl Write for BarWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.suspend(|| io::stderr().write_all(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}
