//! Logs to stderr through `tracing`, drawn above the progress bars rather than through them.

use std::io::{self, Write};

use indicatif::{MultiProgress, ProgressDrawTarget};
use tracing::level_filters::LevelFilter;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// How much the process says: the global options every subcommand takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Output {
    /// More logging (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Warnings and errors only.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// No progress bars (they are hidden anyway when stderr is not a terminal).
    #[arg(long, global = true)]
    pub no_progress: bool,
}

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

/// Sets up logging and the progress bars. The level is `-v` debug, `-vv` trace, `-q` warnings
/// only, info by default, unless `RUST_LOG` gives a filter (`RUST_LOG=debug`,
/// `RUST_LOG=sequencer_host=trace`, …), which wins. Colours only on a terminal, and never when
/// `NO_COLOR` is set to anything but the empty string (<https://no-color.org>).
pub fn init(cli: &Output) -> Progress {
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
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .and_then(|s| match EnvFilter::try_new(&s) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("sequencer-host: warning: RUST_LOG={s:?} is not a log filter ({e}); using the default level");
                None
            }
        });
    let filter = from_env.unwrap_or_else(|| EnvFilter::default().add_directive(level.into()));
    let _ = tracing_subscriber::fmt()
        .with_writer(BarWriters(multi.clone()))
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(colours_wanted())
        .try_init();
    Progress { multi }
}

/// Whether log lines may carry colours: stderr is a terminal and `NO_COLOR` is unset or empty.
fn colours_wanted() -> bool {
    io::IsTerminal::is_terminal(&io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
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
