//! Validated names: relative paths, session ids, skill names and harness names.
//!
//! Bundles come from other machines, so every name that can become part of a filesystem path is
//! checked when it is parsed, not when it is used: a [`RelPath`] that exists is safe to join
//! under a destination directory on Unix, macOS and Windows alike.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {value:?} is not allowed: {reason}")]
pub struct NameError {
    pub what: &'static str,
    pub value: String,
    pub reason: &'static str,
}

fn refuse(what: &'static str, value: &str, reason: &'static str) -> NameError {
    NameError {
        what,
        value: value.to_owned(),
        reason,
    }
}

const MAX_COMPONENT: usize = 255;
const MAX_PATH: usize = 4096;

/// Whether a file name is a Windows device name (`CON`, `PRN`, `AUX`, `NUL`, `COM1`–`COM9`,
/// `LPT1`–`LPT9`), with or without an extension and in any case: Windows opens the device
/// instead of a file of that name.
pub fn is_device_name(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name).to_ascii_uppercase();
    matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || ((stem.starts_with("COM") || stem.starts_with("LPT"))
            && stem.len() == 4
            && stem.as_bytes()[3].is_ascii_digit())
}

/// Checks one path component; `what` names the field for the error.
fn check_component(what: &'static str, whole: &str, c: &str) -> Result<(), NameError> {
    if c.is_empty() {
        return Err(refuse(what, whole, "it has an empty path component"));
    }
    if c == "." || c == ".." {
        return Err(refuse(what, whole, "it has a `.` or `..` component"));
    }
    if c.len() > MAX_COMPONENT {
        return Err(refuse(what, whole, "a component is longer than 255 bytes"));
    }
    if c.chars().any(|ch| ch.is_control()) {
        return Err(refuse(what, whole, "it contains a control character"));
    }
    if c.contains(['\\', ':', '*', '?', '"', '<', '>', '|']) {
        return Err(refuse(
            what,
            whole,
            "it contains one of \\ : * ? \" < > |, which are not portable",
        ));
    }
    if c.ends_with(['.', ' ']) {
        return Err(refuse(
            what,
            whole,
            "a component ends with a dot or a space, which Windows drops",
        ));
    }
    if is_device_name(c) {
        return Err(refuse(
            what,
            whole,
            "it uses a reserved Windows device name",
        ));
    }
    Ok(())
}

/// A relative path with `/` separators that cannot escape the directory it is joined to.
///
/// Refused: empty paths, absolute paths, drive prefixes, `.` and `..` components, empty
/// components (`a//b`), backslashes, NUL and other control characters, characters Windows
/// cannot store, trailing dots or spaces, and reserved device names.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(String);

impl RelPath {
    pub fn new(s: &str) -> Result<Self, NameError> {
        const WHAT: &str = "path";
        if s.is_empty() {
            return Err(refuse(WHAT, s, "it is empty"));
        }
        if s.len() > MAX_PATH {
            return Err(refuse(WHAT, s, "it is longer than 4096 bytes"));
        }
        if s.starts_with('/') {
            return Err(refuse(WHAT, s, "it is absolute"));
        }
        for c in s.split('/') {
            check_component(WHAT, s, c)?;
        }
        Ok(RelPath(s.to_owned()))
    }

    /// Builds a `RelPath` from a relative filesystem path (as walked from a directory).
    pub fn from_path(p: &Path) -> Result<Self, NameError> {
        let mut parts = Vec::new();
        for c in p.components() {
            match c {
                std::path::Component::Normal(os) => match os.to_str() {
                    Some(s) => parts.push(s),
                    None => {
                        return Err(refuse(
                            "path",
                            &p.to_string_lossy(),
                            "it is not valid UTF-8",
                        ));
                    }
                },
                _ => {
                    return Err(refuse(
                        "path",
                        &p.to_string_lossy(),
                        "it is not a plain relative path",
                    ));
                }
            }
        }
        RelPath::new(&parts.join("/"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The components, in order.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The path joined under `base`, component by component.
    pub fn under(&self, base: &Path) -> PathBuf {
        let mut out = base.to_path_buf();
        for c in self.components() {
            out.push(c);
        }
        out
    }

    /// `self/other`.
    pub fn join(&self, other: &RelPath) -> RelPath {
        RelPath(format!("{}/{}", self.0, other.0))
    }
}

/// A session's identifier as its harness gave it: any non-empty text of at most 1024 bytes
/// without control characters (`telegram:42` and UUIDs alike).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(String);

impl SessionId {
    pub fn new(s: &str) -> Result<Self, NameError> {
        const WHAT: &str = "session id";
        if s.is_empty() {
            return Err(refuse(WHAT, s, "it is empty"));
        }
        if s.len() > 1024 {
            return Err(refuse(WHAT, s, "it is longer than 1024 bytes"));
        }
        if s.chars().any(char::is_control) {
            return Err(refuse(WHAT, s, "it contains a control character"));
        }
        Ok(SessionId(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A skill's folder name: exactly one portable path component.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SkillName(String);

impl SkillName {
    pub fn new(s: &str) -> Result<Self, NameError> {
        const WHAT: &str = "skill name";
        if s.contains('/') {
            return Err(refuse(WHAT, s, "it contains a `/`"));
        }
        check_component(WHAT, s, s)?;
        Ok(SkillName(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A harness's name, such as `claude-code`, `codex` or `gemini`: lowercase ASCII letters,
/// digits and `-`, starting with a letter or digit, at most 64 bytes.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HarnessName(String);

impl HarnessName {
    pub fn new(s: &str) -> Result<Self, NameError> {
        const WHAT: &str = "harness name";
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-');
        if !ok {
            return Err(refuse(
                WHAT,
                s,
                "it must be lowercase letters, digits and `-`, at most 64 bytes",
            ));
        }
        Ok(HarnessName(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! string_newtype {
    ($t:ident) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl AsRef<str> for $t {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $t {
            type Err = NameError;
            fn from_str(s: &str) -> Result<Self, NameError> {
                $t::new(s)
            }
        }

        impl TryFrom<&str> for $t {
            type Error = NameError;
            fn try_from(s: &str) -> Result<Self, NameError> {
                $t::new(s)
            }
        }

        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $t::new(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}

string_newtype!(RelPath);
string_newtype!(SessionId);
string_newtype!(SkillName);
string_newtype!(HarnessName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_paths_are_refused() {
        for bad in [
            "",
            "/etc/passwd",
            "../evil",
            "a/../../evil",
            "a/./b",
            "a//b",
            "a\\..\\b",
            "C:\\win.txt",
            "C:/win.txt",
            "nul\0byte",
            "CON",
            "docs/aux.txt",
            "com1",
            "trailing.",
            "trailing ",
            "new\nline",
        ] {
            assert!(RelPath::new(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn ordinary_paths_are_accepted() {
        for good in [
            "SKILL.md",
            "scripts/extract.py",
            ".hidden/file",
            "a.b/c",
            "console.md",
            "com10",
            "ünïcode/ファイル.md",
        ] {
            assert_eq!(RelPath::new(good).unwrap().as_str(), good);
        }
    }

    #[test]
    fn session_ids_may_hold_colons_but_not_control_characters() {
        assert!(SessionId::new("telegram:42").is_ok());
        assert!(SessionId::new("a\nb").is_err());
        assert!(SessionId::new("").is_err());
    }

    #[test]
    fn harness_names_are_lowercase_slugs() {
        assert!(HarnessName::new("claude-code").is_ok());
        assert!(HarnessName::new("Claude").is_err());
        assert!(HarnessName::new("-x").is_err());
    }
}
