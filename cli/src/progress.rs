//! A progress bar on stderr, hidden when stderr is not a terminal (indicatif checks) or with
//! `--quiet`.

use std::time::Duration;

use asp_format::progress::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bar every command draws its long work on.
#[derive(Debug, Clone)]
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    pub fn new(quiet: bool) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.enable_steady_tick(Duration::from_millis(120));
            b
        };
        Bar { bar }
    }

    /// Prints a line above the bar (or plainly when it is hidden), on stderr.
    pub fn println(&self, line: impl AsRef<str>) {
        if self.bar.is_hidden() {
            eprintln!("{}", line.as_ref());
        } else {
            self.bar.suspend(|| eprintln!("{}", line.as_ref()));
        }
    }

    pub fn clear(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for Bar {
    fn begin(&self, what: &str, total: Option<u64>) {
        self.bar.reset();
        match total {
            Some(t) => {
                self.bar.set_length(t);
                self.bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} {prefix} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {wide_msg}",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                );
            }
            None => {
                self.bar.unset_length();
                self.bar.set_style(
                    ProgressStyle::with_template("{spinner} {prefix} {binary_bytes} {wide_msg}")
                        .expect("valid template"),
                );
            }
        }
        self.bar.set_prefix(what.to_owned());
        self.bar.set_message("");
    }

    fn advance(&self, n: u64) {
        self.bar.inc(n);
    }

    fn item(&self, name: &str) {
        self.bar.set_message(name.to_owned());
    }

    fn finish(&self) {
        self.bar.set_message("");
    }
}
