//! Secrets that never reach output, logs or error messages.
//!
//! A [`Secret`] has no `Display` and a `Debug` that prints `***`, so it cannot be formatted into
//! a message by accident. Text that comes from elsewhere (a registry's error body, a token
//! server's answer, a credential helper's stderr) may still echo a secret back, so it goes through
//! a [`Scrubber`] that knows every secret of the session in every form it was sent in.

use std::fmt;
use std::sync::{Arc, RwLock};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// A password, identity token or bearer token.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Replaces every known secret in a text with `***`.
#[derive(Clone, Default)]
pub struct Scrubber {
    secrets: Arc<RwLock<Vec<String>>>,
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.secrets.read().map(|l| l.len()).unwrap_or(0);
        write!(f, "Scrubber({n} secrets)")
    }
}

/// Fragments shorter than this are not scrubbed on their own: replacing every `a` in a message
/// because a password is `a` would garble it without protecting anything.
const MIN_SCRUB: usize = 3;

impl Scrubber {
    pub fn new() -> Self {
        Self::default()
    }

    /// Remembers `secret`, also in the forms it travels in: as the password of `user` in a
    /// basic `Authorization` header (base64 of `user:secret`), and percent-encoded in a form.
    pub fn add(&self, user: Option<&str>, secret: &Secret) {
        let s = secret.expose();
        if s.is_empty() {
            return;
        }
        let mut forms = vec![s.to_owned(), percent_encode(s)];
        if let Some(u) = user {
            forms.push(STANDARD.encode(format!("{u}:{s}")));
        }
        let mut list = self.secrets.write().expect("scrubber poisoned");
        for f in forms {
            if f.len() >= MIN_SCRUB && !list.contains(&f) {
                list.push(f);
            }
        }
        // Longest first, so a secret that contains another is replaced whole.
        list.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// `text` with every known secret replaced by `***`.
    pub fn scrub(&self, text: &str) -> String {
        let list = self.secrets.read().expect("scrubber poisoned");
        let mut out = text.to_owned();
        for s in list.iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "***");
            }
        }
        out
    }
}

/// `application/x-www-form-urlencoded` / query encoding of one value.
pub(crate) fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_secret() {
        let s = Secret::new("hunter2-very-secret");
        assert_eq!(format!("{s:?}"), "***");
        assert!(!format!("{:?}", Some(s)).contains("hunter2"));
    }

    #[test]
    fn scrubber_replaces_every_form() {
        let sc = Scrubber::new();
        sc.add(Some("alice"), &Secret::new("p@ss word!"));
        let basic = STANDARD.encode("alice:p@ss word!");
        let text = format!("echo: p@ss word! / {basic} / p%40ss%20word%21");
        let out = sc.scrub(&text);
        assert_eq!(out, "echo: *** / *** / ***");
        assert!(!format!("{sc:?}").contains("word"), "{sc:?}");
    }

    #[test]
    fn tiny_secrets_do_not_garble_text() {
        let sc = Scrubber::new();
        sc.add(None, &Secret::new("a"));
        assert_eq!(sc.scrub("a cat"), "a cat");
    }
}
