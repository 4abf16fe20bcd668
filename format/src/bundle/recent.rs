//! The few dictionary bodies decoded last, kept for the layers that need them next: a
//! session's update stream needs its transcript, and a project's transcripts (layout 4) their
//! project's dictionary. Most recently used first, so a project's dictionary stays while its
//! transcripts come and go. Bundles and repositories read through it alike.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::bundle::oci::MAX_CHAIN;
use crate::digest::Digest;

/// Decodes a body against its dictionary's bytes (none when it has no dictionary).
pub type Decode<'a, E> = dyn Fn(&Digest, Option<&[u8]>) -> Result<Vec<u8>, E> + 'a;

/// Decoded bodies by digest (or what is made of them: a writer keeps project dictionaries
/// prepared for zstd), at most `capacity` of them.
pub struct Recent<T = Vec<u8>> {
    capacity: usize,
    items: Mutex<VecDeque<(Digest, Arc<T>)>>,
}

impl<T> std::fmt::Debug for Recent<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recent")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl<T> Recent<T> {
    pub fn new(capacity: usize) -> Self {
        Recent {
            capacity: capacity.max(1),
            items: Mutex::new(VecDeque::new()),
        }
    }

    /// `d`'s value: kept, else made by `make` (without the lock held, so `make` may read
    /// through this too) and kept.
    pub fn get_or_make<E>(
        &self,
        d: &Digest,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
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

impl Recent<Vec<u8>> {
    /// Dictionary body `d`'s bytes, decoded against its own dictionary when it has one, and
    /// that one against its own: at most [`MAX_CHAIN`] bodies deep (layout 4: a transcript
    /// against its project's dictionary), each kept. `dictionary_of` names a body's
    /// dictionary, `decode` decodes a body against its dictionary's bytes, and `too_deep`
    /// makes the error for a longer chain (or a cycle). Every reader of a layout 4 chain (a
    /// bundle, a repository snapshot, `asp check`) goes through this one walk.
    pub fn chained<E>(
        &self,
        d: &Digest,
        dictionary_of: &dyn Fn(&Digest) -> Result<Option<Digest>, E>,
        decode: &Decode<'_, E>,
        too_deep: &dyn Fn(String) -> E,
    ) -> Result<Arc<Vec<u8>>, E> {
        self.chained_at(d, 1, dictionary_of, decode, too_deep)
    }

    fn chained_at<E>(
        &self,
        d: &Digest,
        depth: usize,
        dictionary_of: &dyn Fn(&Digest) -> Result<Option<Digest>, E>,
        decode: &Decode<'_, E>,
        too_deep: &dyn Fn(String) -> E,
    ) -> Result<Arc<Vec<u8>>, E> {
        self.get_or_make(d, || {
            let base = match dictionary_of(d)? {
                Some(x) if depth < MAX_CHAIN => {
                    Some(self.chained_at(&x, depth + 1, dictionary_of, decode, too_deep)?)
                }
                Some(_) => {
                    return Err(too_deep(format!(
                        "the dictionary {d} is more than {MAX_CHAIN} deep"
                    )));
                }
                None => None,
            };
            decode(d, base.as_deref().map(Vec::as_slice))
        })
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

    /// A chain of two decodes its base first; a third body deep, or a cycle, is refused.
    #[test]
    fn a_chain_is_at_most_two_deep() {
        let (a, b, c) = (Digest::of(b"a"), Digest::of(b"b"), Digest::of(b"c"));
        let decode = |d: &Digest, base: Option<&[u8]>| {
            let mut v = base.unwrap_or_default().to_vec();
            v.extend_from_slice(if *d == a {
                b"a"
            } else if *d == b {
                b"b"
            } else {
                b"c"
            });
            Ok(v)
        };
        let too_deep = |m: String| m;
        // b against a.
        let two = |d: &Digest| Ok(if *d == b { Some(a) } else { None });
        let r = Recent::new(4);
        assert_eq!(*r.chained(&b, &two, &decode, &too_deep).unwrap(), b"ab");
        // c against b against a; and a cycle.
        let three = |d: &Digest| {
            Ok(if *d == c {
                Some(b)
            } else if *d == b {
                Some(a)
            } else {
                None
            })
        };
        let e = Recent::new(4)
            .chained(&c, &three, &decode, &too_deep)
            .unwrap_err();
        assert!(e.contains("more than 2 deep"), "{e}");
        let cycle = |d: &Digest| Ok(Some(if *d == a { b } else { a }));
        assert!(
            Recent::new(4)
                .chained(&a, &cycle, &decode, &too_deep)
                .is_err()
        );
    }
}
