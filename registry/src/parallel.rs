//! Running blob transfers on a few threads.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::error::Error;

/// Calls `f` on every item with up to `jobs` threads and returns the results in item order.
/// After the first error no new item is started; that error is returned (the one of the
/// lowest item index, if several failed at once).
pub(crate) fn map<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(&T) -> Result<R, Error> + Sync,
) -> Result<Vec<R>, Error> {
    let jobs = jobs.clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Option<Result<R, Error>>>> =
        Mutex::new((0..items.len()).map(|_| None).collect());
    let work = || {
        loop {
            if failed.load(Ordering::SeqCst) {
                break;
            }
            let i = next.fetch_add(1, Ordering::SeqCst);
            if i >= items.len() {
                break;
            }
            let r = f(&items[i]);
            if r.is_err() {
                failed.store(true, Ordering::SeqCst);
            }
            results.lock().expect("results poisoned")[i] = Some(r);
        }
    };
    if jobs == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..jobs {
                s.spawn(work);
            }
        });
    }
    let mut out = Vec::with_capacity(items.len());
    for r in results
        .into_inner()
        .expect("results poisoned")
        .into_iter()
        .flatten()
    {
        out.push(r?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_item_order_and_errors_stop_the_rest() {
        let items: Vec<u32> = (0..50).collect();
        let out = map(&items, 4, |i| Ok(i * 2)).unwrap();
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        let started = AtomicUsize::new(0);
        let e = map(&items, 1, |i| {
            started.fetch_add(1, Ordering::SeqCst);
            if *i == 3 {
                Err(Error::Usage("three".into()))
            } else {
                Ok(*i)
            }
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "three");
        assert_eq!(started.load(Ordering::SeqCst), 4);
    }
}
