//! The few dictionary bodies decoded last, kept for the layers that need them next: a
//! session's update stream needs its transcript, and a project's transcripts (layout 4) their
//! project's dictionary. Most recently used first, so a project's dictionary stays while its
//! transcripts come and go. Bundles and repositories read through it alike.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::digest::Digest;

/// Decoded bodies by digest, at most `capacity` of them.
#[derive(Debug)]
pub struct Recent {
    capacity: usize,
    items: Mutex<VecDeque<(Digest, Arc<Vec<u8>>)>>,
}

impl Recent {
    pub fn new(capacity: usize) -> Self {
        Recent {
            capacity: capacity.max(1),
            items: Mutex::new(VecDeque::new()),
        }
    }

    /// `d`'s bytes: kept, else made by `make` (without the lock held, so `make` may read
    /// through this too) and kept.
    pub fn get_or_make<E>(
        &self,
        d: &Digest,
        make: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<Arc<Vec<u8>>, E> {
        {
            let mut items = self.items.lock().expect("recent bodies");
            if let Some(i) = items.iter().position(|(k, _)| k == d) {
                let hit = items.remove(i).expect("found");
                let v = Arc::clone(&hit.1);
                items.push_front(hit);
                return Ok(v);
            }
        }
        let v = Arc::new(make()?);
        let mut items = self.items.lock().expect("recent bodies");
        items.push_front((*d, Arc::clone(&v)));
        items.truncate(self.capacity);
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_recently_used_stays() {
        let r = Recent::new(2);
        let (a, b, c) = (Digest::of(b"a"), Digest::of(b"b"), Digest::of(b"c"));
        let made = std::cell::Cell::new(0);
        let make = |x: &[u8]| {
            made.set(made.get() + 1);
            Ok::<_, ()>(x.to_vec())
        };
        r.get_or_make(&a, || make(b"a")).unwrap();
        r.get_or_make(&b, || make(b"b")).unwrap();
        // `a` used again, then `c` made: `b` goes, `a` stays.
        r.get_or_make(&a, || make(b"a")).unwrap();
        r.get_or_make(&c, || make(b"c")).unwrap();
        assert_eq!(made.get(), 3);
        assert_eq!(*r.get_or_make(&a, || make(b"x")).unwrap(), b"a");
        assert_eq!(made.get(), 3);
        r.get_or_make(&b, || make(b"b")).unwrap();
        assert_eq!(made.get(), 4);
    }
}
