//! Reading part of a state manifest: some kinds, and of the sessions only those asked for with
//! their subagent sessions.
//!
//! A state manifest of a large store lists thousands of sessions (a few MB of JSON). Reading one
//! session parsed all of them into [`Session`] values (their `_meta` objects, paths and ids
//! checked one by one) only to keep one. Here the document is walked once with every session
//! kept as its raw JSON text, each session's id and parent are picked out of that text without
//! building anything, and only the sessions kept (and the kinds asked for) are parsed and
//! checked. `asp verify` still parses and checks the whole document.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::bundle::layout::Manifest;
use crate::kind::{KindSet, StateKind};
use crate::state::{Session, State, kept_ids};

/// The part of a bundle's state a reader wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part<'a> {
    /// The kinds to read.
    pub kinds: KindSet,
    /// Only these sessions and their subagent sessions (`_meta.asp.parent.sessionId`, at any
    /// depth), when given.
    pub sessions: Option<&'a [String]>,
}

impl Part<'static> {
    /// The whole state.
    pub const ALL: Part<'static> = Part {
        kinds: KindSet::ALL,
        sessions: None,
    };
}

impl Part<'_> {
    pub fn is_all(&self) -> bool {
        self.kinds == KindSet::ALL && self.sessions.is_none()
    }
}

/// The envelope with every kind of the state as its raw text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawManifest<'a> {
    #[serde(borrow, default)]
    schema_version: Option<&'a RawValue>,
    #[serde(borrow, default)]
    media_type: Option<&'a RawValue>,
    #[serde(borrow, default)]
    created: Option<&'a RawValue>,
    #[serde(borrow, default)]
    state: Option<RawState<'a>>,
}

/// `null` reads as absent, as [`State`] reads it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawState<'a> {
    #[serde(borrow, default)]
    sessions: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    instructions: Option<&'a RawValue>,
    #[serde(borrow, default)]
    skills: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tools: Option<&'a RawValue>,
    #[serde(borrow, default)]
    memory: Option<&'a RawValue>,
    #[serde(borrow, default)]
    settings: Option<&'a RawValue>,
}

/// Why part of a manifest could not be read: a message as [`check_manifest`] words it, with
/// the line and column in the whole document.
///
/// [`check_manifest`]: super::read
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PartError {
    /// The envelope: not JSON, or a `schemaVersion`/`mediaType` this asp does not read.
    Envelope(String),
    /// A part that does not parse as the state model says.
    Field(String),
}

/// Reads `kinds` of the state manifest `text`, and of its sessions only those `part` asks for.
/// `envelope` checks the `schemaVersion` and `mediaType` values before anything else is read,
/// so a newer schema gets its own answer rather than a field error.
pub(crate) fn read_part(
    text: &str,
    part: &Part<'_>,
    envelope: impl FnOnce(Option<serde_json::Value>, Option<serde_json::Value>) -> Result<(), String>,
) -> Result<Manifest, PartError> {
    let raw: RawManifest<'_> = serde_json::from_str(text)
        .map_err(|e| PartError::Envelope(format!("it is not a JSON object: {e}")))?;
    let value = |r: Option<&RawValue>| {
        r.and_then(|r| serde_json::from_str::<serde_json::Value>(r.get()).ok())
    };
    envelope(value(raw.schema_version), value(raw.media_type)).map_err(PartError::Envelope)?;
    let (Some(schema_version), Some(media_type), Some(st)) =
        (raw.schema_version, raw.media_type, raw.state)
    else {
        // What the envelope check let through but the manifest lacks: the whole document's
        // parse words it.
        let e = serde_json::from_str::<Manifest>(text).err();
        return Err(PartError::Field(e.map_or_else(
            || "it is not a state manifest".to_owned(),
            |e| e.to_string(),
        )));
    };
    let schema_version = parse::<u64>(text, schema_version)?;
    let media_type = parse::<String>(text, media_type)?;
    let created = opt::<Option<String>>(text, raw.created)?.flatten();
    let want = |k: StateKind| part.kinds.contains(k);
    let sessions = match st.sessions {
        Some(all) if want(StateKind::Sessions) => Some(sessions(text, &all, part.sessions)?),
        _ => None,
    };
    let state = State {
        sessions,
        instructions: opt(
            text,
            st.instructions.filter(|_| want(StateKind::Instructions)),
        )?,
        skills: opt(text, st.skills.filter(|_| want(StateKind::Skills)))?,
        tools: opt(text, st.tools.filter(|_| want(StateKind::Tools)))?,
        memory: opt(text, st.memory.filter(|_| want(StateKind::Memory)))?,
        settings: opt(text, st.settings.filter(|_| want(StateKind::Settings)))?,
    };
    Ok(Manifest {
        schema_version,
        media_type,
        created,
        state,
    })
}

/// The sessions `ids` names and their subagent sessions, in manifest order; all of them
/// without `ids`.
///
/// Only sessions whose text could name a kept session have their id and parent read: a kept
/// session's text holds its id, or its parent's, as a JSON string, so one whose text (free of
/// escapes, which could spell an id otherwise) holds no kept id as `"<id>"` is not kept. The
/// ids are found by a substring search over the document, a small part of the cost of reading
/// every session's members.
fn sessions(
    text: &str,
    all: &[&RawValue],
    ids: Option<&[String]>,
) -> Result<Vec<Session>, PartError> {
    let Some(ids) = ids else {
        return all.iter().map(|r| parse(text, r)).collect();
    };
    // Where each session's text starts in the document, ascending.
    let base = text.as_ptr() as usize;
    let starts: Vec<usize> = all
        .iter()
        .map(|r| r.get().as_ptr() as usize - base)
        .collect();
    let mut keys: Vec<Option<SessionKey<'_>>> = Vec::with_capacity(all.len());
    for r in all {
        let escaped = memchr::memchr(b'\\', r.get().as_bytes()).is_some();
        keys.push(if escaped { Some(key(text, r)?) } else { None });
    }
    let mut searched: BTreeSet<String> = BTreeSet::new();
    let mut keep: BTreeSet<String> = ids.iter().cloned().collect();
    // The sessions kept, of those whose id and parent have been read.
    let kept = |keys: &[Option<SessionKey<'_>>]| {
        let pairs: Vec<(&str, Option<&str>)> = keys
            .iter()
            .flatten()
            .map(|k| (k.id.as_ref(), k.parent.as_deref()))
            .collect();
        kept_ids(&pairs, ids).0
    };
    loop {
        let new: Vec<String> = keep.difference(&searched).cloned().collect();
        if new.is_empty() {
            break;
        }
        if searched.len() + new.len() > SEARCHES {
            // Many ids (many asked, many subagents, a long chain of parents): reading every
            // session's id and parent once costs less than a search of the whole document
            // per id, and with all of them known the kept set is exact.
            for (k, r) in keys.iter_mut().zip(all) {
                if k.is_none() {
                    *k = Some(key(text, r)?);
                }
            }
            keep = kept(&keys);
            break;
        }
        for id in new {
            let needle = format!("\"{id}\"");
            for at in memchr::memmem::find_iter(text.as_bytes(), needle.as_bytes()) {
                // The session whose text holds the match, if one does.
                let Some(i) = starts.partition_point(|&s| s <= at).checked_sub(1) else {
                    continue;
                };
                if at + needle.len() <= starts[i] + all[i].get().len() && keys[i].is_none() {
                    keys[i] = Some(key(text, all[i])?);
                }
            }
            searched.insert(id);
        }
        keep = kept(&keys);
    }
    all.iter()
        .zip(&keys)
        .filter(|(_, k)| k.as_ref().is_some_and(|k| keep.contains(k.id.as_ref())))
        .map(|(r, _)| parse(text, r))
        .collect()
}

/// How many ids the prefilter searches the document for before it reads every session's id
/// and parent instead: each search is a pass over the whole state manifest.
const SEARCHES: usize = 16;

/// A session's id and parent, read from its text `raw`.
fn key<'a>(text: &str, raw: &'a RawValue) -> Result<SessionKey<'a>, PartError> {
    serde_json::from_str::<SessionKey<'_>>(raw.get())
        .map_err(|e| PartError::Field(at(text, raw, &e)))
}

fn opt<'de, T: Deserialize<'de>>(
    text: &str,
    raw: Option<&'de RawValue>,
) -> Result<Option<T>, PartError> {
    raw.map(|r| parse(text, r)).transpose()
}

/// Parses one part, with an error placed in the whole document.
fn parse<'de, T: Deserialize<'de>>(text: &str, raw: &'de RawValue) -> Result<T, PartError> {
    serde_json::from_str(raw.get()).map_err(|e| PartError::Field(at(text, raw, &e)))
}

/// `e`, which is about `raw`, with its line and column in `text` (of which `raw` is a slice),
/// as serde_json words an error about the whole document.
fn at(text: &str, raw: &RawValue, e: &serde_json::Error) -> String {
    let whole = e.to_string();
    if e.line() == 0 {
        return whole;
    }
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let msg = whole.strip_suffix(&suffix).unwrap_or(&whole);
    // `raw` borrows from `text`, so its offset is the distance between the two.
    let offset = (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    let before = &text.as_bytes()[..offset.min(text.len())];
    let lines_before = before.iter().filter(|&&b| b == b'\n').count();
    let column_before = before.len()
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
    let (line, column) = if e.line() == 1 {
        (lines_before + 1, column_before + e.column())
    } else {
        (lines_before + e.line(), e.column())
    };
    format!("{msg} at line {line} column {column}")
}

/// A session's id and its parent's (`_meta.asp.parent.sessionId`), read in place.
struct SessionKey<'a> {
    id: Cow<'a, str>,
    parent: Option<Cow<'a, str>>,
}

impl<'de> Deserialize<'de> for SessionKey<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SessionKey<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a session")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut id = None;
                let mut parent = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "id" => {
                            if id.is_some() {
                                return Err(de::Error::duplicate_field("id"));
                            }
                            id = Some(map.next_value::<Cow<'de, str>>()?);
                        }
                        "_meta" => {
                            parent = map.next_value_seed(At(&["asp", "parent", "sessionId"]))?;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(SessionKey {
                    id: id.ok_or_else(|| de::Error::missing_field("id"))?,
                    parent,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// The string at a path of object members, when every step is an object and the last value is
/// a string; anything else is passed over. It reads what `Value::get` steps read (the last of
/// repeated members wins, as a JSON object keeps it), without building the objects.
struct At<'p>(&'p [&'static str]);

impl<'de> DeserializeSeed<'de> for At<'_> {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for At<'_> {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match self.0.split_first() {
                Some((first, rest)) if key == *first => found = map.next_value_seed(At(rest))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(self.0.is_empty().then_some(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.is_empty().then(|| Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(self.0.is_empty().then_some(Cow::Owned(v)))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::layout::SCHEMA_VERSION;
    use crate::digest::Descriptor;
    use serde_json::json;

    fn session(id: &str, parent: Option<serde_json::Value>, path: &str) -> serde_json::Value {
        let d = Descriptor::of(id.as_bytes());
        let mut s = json!({
            "id": id, "title": format!("t {id}"), "updates": d,
            "native": {"harness": "claude-code", "files": [{"path": path, "content": d}]},
        });
        if let Some(p) = parent {
            s["_meta"] = json!({"x": [1, {"asp": 2}], "asp": p});
        }
        s
    }

    fn manifest(sessions: Vec<serde_json::Value>) -> String {
        let d = Descriptor::of(b"rules");
        let m = json!({
            "schemaVersion": SCHEMA_VERSION,
            "mediaType": crate::bundle::layout::MANIFEST_MEDIA_TYPE,
            "state": {
                "sessions": sessions,
                "instructions": {"text": d},
                "tools": [{"name": "fs", "command": "npx", "args": [], "env": []}],
                "settings": {"model": "opus"},
            }
        });
        serde_json::to_string_pretty(&m).unwrap()
    }

    fn ok(_: Option<serde_json::Value>, _: Option<serde_json::Value>) -> Result<(), String> {
        Ok(())
    }

    fn ids(m: &Manifest) -> Vec<&str> {
        m.state
            .sessions
            .iter()
            .flatten()
            .map(|s| s.id.as_str())
            .collect()
    }

    /// Reading only `asked` of `text` gives what `State::select` keeps of the whole.
    fn assert_part_is_select(text: &str, whole: &Manifest, kinds: KindSet, asked: &[&str]) {
        let asked: Vec<String> = asked.iter().map(|s| s.to_string()).collect();
        let part = Part {
            kinds,
            sessions: Some(&asked),
        };
        let got = read_part(text, &part, ok).unwrap();
        let (want, _) = whole.state.select(kinds, Some(&asked));
        assert_eq!(got.state, want, "{asked:?}");
    }

    #[test]
    fn a_part_is_what_select_keeps_of_the_whole() {
        let parent = |id: &str| Some(json!({"parent": {"sessionId": id}}));
        let text = manifest(vec![
            session("a", None, "a.jsonl"),
            session("a-sub", parent("a"), "a-sub.jsonl"),
            session("a-sub-sub", parent("a-sub"), "a-sub-sub.jsonl"),
            session("b", None, "b.jsonl"),
            // Not an object where the parent would be, or the parent repeated: read as
            // `Value::get` reads them.
            session("c", Some(json!("a")), "c.jsonl"),
            session("d", Some(json!({"parent": "a"})), "d.jsonl"),
            session("e", Some(json!({"parent": {"sessionId": 7}})), "e.jsonl"),
            session("f", parent("escaped-parent"), "f.jsonl"),
            session("g", None, "g.jsonl"),
        ]);
        let text = text.replace("\"sessionId\": 7", "\"sessionId\": \"a\", \"sessionId\": 7");
        // A parent spelled with an escape is still found; ids in a title are not parents.
        let text = text
            .replace("\"escaped-parent\"", "\"\\u0061\"")
            .replace("\"t b\"", "\"t b, not \\\"a\\\" \\\"a-sub\\\"\"")
            .replace("\"t g\"", "\"t g \\\"a\\\"\"");
        assert!(text.contains(r#""sessionId": "\u0061""#), "{text}");
        let whole: Manifest = serde_json::from_str(&text).unwrap();
        let kinds = KindSet::EMPTY
            .with(StateKind::Sessions)
            .with(StateKind::Tools);
        for asked in [
            &["a"][..],
            &["a-sub"],
            &["b", "a-sub-sub"],
            &["zz", "b"],
            &["f", "g"],
            &[],
        ] {
            assert_part_is_select(&text, &whole, kinds, asked);
        }
        let asked = ["a".to_owned()];
        let got = read_part(
            &text,
            &Part {
                kinds,
                sessions: Some(&asked),
            },
            ok,
        )
        .unwrap();
        assert_eq!(ids(&got), ["a", "a-sub", "a-sub-sub", "f"]);
        assert!(got.state.instructions.is_none() && got.state.settings.is_none());
        let all = read_part(&text, &Part::ALL, ok).unwrap();
        assert_eq!(all, whole);
    }

    #[test]
    fn a_chain_longer_than_the_searches_is_kept_whole() {
        // s0 <- s1 <- ... <- s39, and others beside them: asking for s0 keeps the chain,
        // which the prefilter gives up searching for id by id after SEARCHES ids.
        let mut all = vec![session("s0", None, "s0.jsonl")];
        for i in 1..40 {
            let parent = Some(json!({"parent": {"sessionId": format!("s{}", i - 1)}}));
            all.push(session(&format!("s{i}"), parent, &format!("s{i}.jsonl")));
        }
        all.push(session("other", None, "other.jsonl"));
        let text = manifest(all);
        let whole: Manifest = serde_json::from_str(&text).unwrap();
        let kinds = KindSet::EMPTY.with(StateKind::Sessions);
        for asked in [&["s0"][..], &["s20"], &["other"]] {
            assert_part_is_select(&text, &whole, kinds, asked);
        }
        let asked = ["s0".to_owned()];
        let part = Part {
            kinds,
            sessions: Some(&asked),
        };
        assert_eq!(ids(&read_part(&text, &part, ok).unwrap()).len(), 40);
    }

    #[test]
    fn only_the_sessions_asked_for_are_checked_and_errors_say_where_in_the_document() {
        let text = manifest(vec![
            session("a", None, "a.jsonl"),
            session("b", None, "../escapes.jsonl"),
        ]);
        let whole = serde_json::from_str::<Manifest>(&text)
            .unwrap_err()
            .to_string();
        assert!(
            whole.contains("escapes") && whole.contains(" at line "),
            "{whole}"
        );
        let part = |id: &str| {
            let asked = [id.to_owned()];
            read_part(
                &text,
                &Part {
                    kinds: KindSet::ALL,
                    sessions: Some(&asked),
                },
                ok,
            )
        };
        assert_eq!(ids(&part("a").unwrap()), ["a"]);
        // The same words and the same place as the whole document's parse.
        assert_eq!(part("b").unwrap_err(), PartError::Field(whole));
        // On one line too.
        let compact =
            serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&text).unwrap())
                .unwrap();
        let whole = serde_json::from_str::<Manifest>(&compact)
            .unwrap_err()
            .to_string();
        let asked = ["b".to_owned()];
        let got = read_part(
            &compact,
            &Part {
                kinds: KindSet::ALL,
                sessions: Some(&asked),
            },
            ok,
        );
        assert_eq!(got.unwrap_err(), PartError::Field(whole));
    }

    #[test]
    fn the_envelope_is_checked_first() {
        let text = manifest(vec![session("a", None, "a.jsonl")]).replace(
            &format!("\"schemaVersion\": {SCHEMA_VERSION}"),
            "\"schemaVersion\": 99",
        );
        let refuse = |v: Option<serde_json::Value>, _: Option<serde_json::Value>| {
            Err(format!("schemaVersion {v:?}"))
        };
        assert_eq!(
            read_part(&text, &Part::ALL, refuse).unwrap_err(),
            PartError::Envelope("schemaVersion Some(Number(99))".to_owned())
        );
        let no_state = r#"{"schemaVersion": 1, "mediaType": "m"}"#;
        let err = read_part(no_state, &Part::ALL, ok).unwrap_err();
        assert!(
            matches!(&err, PartError::Field(m) if m.contains("missing field `state`")),
            "{err:?}"
        );
        assert!(matches!(
            read_part("[1", &Part::ALL, ok).unwrap_err(),
            PartError::Envelope(_)
        ));
    }
}
