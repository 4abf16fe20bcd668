//! How many sessions are read at once: a budget in bytes the reading threads share, so that
//! peak memory follows the largest session rather than the number of cores.
//!
//! [`crate::Store`] reads a survey's entries on a pool of threads; each takes its place here
//! before it reads ([`ReadingBudget::admit`]) and gives it back when done. `asp check
//! --read-data` (asp-repo) bounds the transcripts it holds as dictionaries the same way.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::harness::Surveyed;

/// How many bytes of sessions are read at once, at most; a larger session is read alone.
///
/// What a read holds follows the size of what it reads (a 34 MB Claude Code transcript: its
/// 14 MB index, its update stream buffered for the compressor, the native body waiting for a
/// worker; about 110 MB of heap), so without a bound peak memory grew with the number of
/// threads: packing the 1 GiB bench store took 187 / 257 / 315 MiB with 2 / 4 / 8 threads,
/// as often as two or more of its 20-35 MB sessions were read at once. Sessions of the median
/// size (250 KB) are read on every thread as before.
pub const READING_BUDGET: u64 = 32 << 20;

/// What each entry weighs in the [`ReadingBudget`]: the sizes of the files only it reads. A
/// file many entries list (OpenCode's database, which every session's read queries for its
/// own rows) says nothing of what one read holds, and counted whole it would make every read
/// wait for the others.
pub(crate) fn weights(entries: &[&Surveyed]) -> Vec<u64> {
    let mut listed: HashMap<&Path, usize> = HashMap::new();
    for e in entries {
        let own: HashSet<&Path> = e.files.iter().map(|f| f.path.as_path()).collect();
        for path in own {
            *listed.entry(path).or_default() += 1;
        }
    }
    entries
        .iter()
        .map(|e| {
            e.files
                .iter()
                .filter(|f| listed[f.path.as_path()] == 1)
                .map(|f| f.size)
                .sum()
        })
        .collect()
}

/// The order in which to read `entries`: grouped by each one's project (`project`,
/// `Harness::surveyed_project`: for Claude Code its project's folder, for Codex a path made of
/// its `cwd`), each group in survey order, the groups in the order of their paths, entries
/// without a project last.
///
/// Only the order of reading: what a read gives is put back in survey order, so the state and
/// the bundle do not change. Transcripts are compressed against their project's dictionary
/// (spec/aspstate.md §4.1), which the compression workers hold prepared (tables and all,
/// about 1.8 MB each); read in id order the projects' transcripts come mixed, so every
/// project's dictionary was kept prepared at once, or prepared again and again. Grouped, one or
/// two are in use at a time. Measured on the 1 GiB bench store (20 projects, `asp-pack`):
/// 171 preparations and 29.6 MB of prepared dictionaries at the peak in id order (16 kept),
/// 25 and 7.4 MB grouped (4 kept; heaptrack); see spec/aspstate.md §13.3 for the time.
pub(crate) fn order<'a, T>(
    entries: &'a [T],
    project: impl Fn(&'a T) -> Option<PathBuf>,
) -> Vec<usize> {
    let mut order: Vec<(bool, Option<PathBuf>, usize)> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let p = project(e);
            (p.is_none(), p, i)
        })
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, _, i)| i).collect()
}

/// Bytes being read, shared by the reading threads. Sessions are let in in the order they
/// ask ([`ReadingBudget::admit`] takes a ticket), each when it fits beside the ones being
/// read or when none is: a large session waits for the ones before it, never for the ones
/// after it (which would put every large session at the end, read alone).
#[derive(Debug)]
pub struct ReadingBudget {
    limit: u64,
    state: Mutex<Reading>,
    room: Condvar,
}

#[derive(Debug, Default)]
struct Reading {
    /// Bytes being read.
    bytes: u64,
    /// The next ticket to hand out, and the ticket let in next.
    next_ticket: u64,
    serving: u64,
}

/// A session's place in the [`ReadingBudget`], given back when dropped.
#[derive(Debug)]
pub struct Admitted<'a> {
    budget: &'a ReadingBudget,
    bytes: u64,
}

impl ReadingBudget {
    pub fn new(limit: u64) -> Self {
        ReadingBudget {
            limit,
            state: Mutex::new(Reading::default()),
            room: Condvar::new(),
        }
    }

    /// The counts stay right whatever a reader did: none panics while holding the lock.
    fn lock(&self) -> MutexGuard<'_, Reading> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn admit(&self, bytes: u64) -> Admitted<'_> {
        let mut st = self.lock();
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        while st.serving != ticket || (st.bytes > 0 && st.bytes.saturating_add(bytes) > self.limit)
        {
            st = self.room.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        st.serving += 1;
        st.bytes = st.bytes.saturating_add(bytes);
        // The next ticket may fit too.
        self.room.notify_all();
        Admitted {
            budget: self,
            bytes,
        }
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        let mut st = self.budget.lock();
        st.bytes -= self.bytes;
        drop(st);
        self.budget.room.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Admits `bytes` on another thread; the receiver hears once it is let in, and the
    /// sender drops its place.
    fn admit_aside<'s>(
        s: &'s std::thread::Scope<'s, '_>,
        budget: &'s ReadingBudget,
        bytes: u64,
    ) -> (mpsc::Receiver<()>, mpsc::Sender<()>) {
        let (in_tx, in_rx) = mpsc::channel();
        let (out_tx, out_rx) = mpsc::channel::<()>();
        s.spawn(move || {
            let _held = budget.admit(bytes);
            in_tx.send(()).unwrap();
            let _ = out_rx.recv();
        });
        (in_rx, out_tx)
    }

    #[test]
    fn sessions_are_read_by_project_folder_each_in_survey_order_then_those_without_one() {
        // (survey index, folder of its transcript)
        let entries = [
            Some("/p/b"),
            None,
            Some("/p/a"),
            Some("/p/b"),
            Some("/p/a"),
            None,
        ];
        let got = order(&entries, |f| f.map(PathBuf::from));
        assert_eq!(got, [2, 4, 0, 3, 1, 5]);
    }

    const WAIT: Duration = Duration::from_millis(50);
    const LONG: Duration = Duration::from_secs(10);

    #[test]
    fn a_session_waits_until_it_fits_beside_the_ones_being_read() {
        let budget = ReadingBudget::new(10);
        std::thread::scope(|s| {
            let (small_in, small_out) = admit_aside(s, &budget, 4);
            small_in.recv_timeout(LONG).expect("4 of 10 fits");
            let (large_in, large_out) = admit_aside(s, &budget, 6);
            large_in.recv_timeout(LONG).expect("4 + 6 fits");
            let (third_in, third_out) = admit_aside(s, &budget, 1);
            assert!(
                third_in.recv_timeout(WAIT).is_err(),
                "10 bytes are being read"
            );
            drop(small_out);
            third_in
                .recv_timeout(LONG)
                .expect("4 bytes were given back");
            drop((large_out, third_out));
        });
        assert_eq!(budget.lock().bytes, 0);
    }

    #[test]
    fn a_session_larger_than_the_budget_waits_for_the_ones_before_it_and_is_read_alone() {
        let budget = ReadingBudget::new(10);
        std::thread::scope(|s| {
            let (small_in, small_out) = admit_aside(s, &budget, 1);
            small_in.recv_timeout(LONG).unwrap();
            let (huge_in, huge_out) = admit_aside(s, &budget, 100);
            assert!(huge_in.recv_timeout(WAIT).is_err(), "1 byte is being read");
            // One that asks later waits behind the huge one, though it would fit.
            let asked = std::time::Instant::now();
            while budget.lock().next_ticket < 2 {
                assert!(asked.elapsed() < LONG, "the huge one never asked");
                std::thread::sleep(Duration::from_millis(1));
            }
            let (next_in, next_out) = admit_aside(s, &budget, 1);
            assert!(next_in.recv_timeout(WAIT).is_err(), "the huge one is first");
            drop(small_out);
            huge_in.recv_timeout(LONG).expect("nothing else is read");
            assert!(
                next_in.recv_timeout(WAIT).is_err(),
                "the huge one is read alone"
            );
            drop(huge_out);
            next_in.recv_timeout(LONG).unwrap();
            drop(next_out);
        });
        assert_eq!(budget.lock().bytes, 0);
    }
}
