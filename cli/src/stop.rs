//! Ctrl-C, SIGTERM and SIGHUP during a command that writes: what it was writing under a
//! temporary name is removed before the process ends ([`asp_format::on_stop`]).
//!
//! The three signals are blocked in every thread, and one thread waits for them
//! (`sigwait`), so what runs on a signal is ordinary code on an ordinary thread, not a signal
//! handler. It removes the registered temporaries, then ends the process by the same signal
//! with its default action, so the exit status is what it was without this (a shell shows
//! 130 for Ctrl-C, 143 for SIGTERM). Children started with `std::process::Command` begin with
//! no signal blocked (the standard library resets the mask), so they are not changed by it.

/// Removes the registered temporaries when the process is told to stop. Called first thing
/// in `main`, before any thread starts (a thread inherits the signal mask of its maker).
/// Where signals cannot be waited for so, nothing changes.
pub fn remove_temporaries_on_stop() {
    #[cfg(unix)]
    unix::install();
}

#[cfg(unix)]
mod unix {
    use std::mem::MaybeUninit;
    use std::ptr;

    const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    // SAFETY (every block below): these calls take a signal set this function owns, or a
    // signal number; none keeps a pointer past the call.
    #[allow(unsafe_code)]
    pub(super) fn install() {
        // A signal the process was started with ignored (`nohup`; a script's `cmd &`, whose
        // shell ignores SIGINT for it) stays ignored: blocked, it would be waited for and end
        // the process (review helper-138, 1).
        let set = unsafe {
            let mut set = MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigemptyset(set.as_mut_ptr());
            let mut set = set.assume_init();
            for s in SIGNALS {
                let mut old = MaybeUninit::<libc::sigaction>::zeroed();
                let ignored = libc::sigaction(s, ptr::null(), old.as_mut_ptr()) == 0
                    && old.assume_init().sa_sigaction == libc::SIG_IGN;
                if !ignored {
                    libc::sigaddset(&mut set, s);
                }
            }
            set
        };
        if unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, ptr::null_mut()) } != 0 {
            return;
        }
        let waiter = std::thread::Builder::new()
            .name("asp-stop".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                let mut sig: libc::c_int = 0;
                loop {
                    if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                        break;
                    }
                }
                asp_format::on_stop::remove_all();
                unsafe {
                    libc::signal(sig, libc::SIG_DFL);
                    libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, ptr::null_mut());
                    libc::raise(sig);
                }
                // Not reached: the default action of all three ends the process.
                std::process::exit(128 + sig);
            });
        if waiter.is_err() {
            // No one would wait for them: let them end the process as before.
            unsafe {
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, ptr::null_mut());
            }
        }
    }
}
