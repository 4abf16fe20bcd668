//! A transcript line as the replay reads it: typed views that borrow from the line's bytes.
//!
//! The replay looks at a dozen members of a line. Parsing the whole line into a `Value` tree
//! (every key a `String`, every tool result and file body unescaped into its own allocation)
//! and freeing it again was a third of the replay's time. These views read the members the
//! replay looks at, skip the others without building them, and keep what is only carried into
//! the update stream as the line's own text (`&RawValue`), parsed when an update carries it.
//!
//! Every member reads as `Value::get` sees it in the parsed line: a member of another JSON
//! type than the one asked for counts as absent, a carried member that is `null` is present.
//! The one shape the typed form cannot take is a line that gives one of these members twice
//! (`Value` keeps the last); such a line is read through a `Value` tree written out again
//! ([`with_line`]), which holds each member once, so it reads the same.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::transcript::skim::Obj;
use crate::kit::json_scan::{plain_run, reads_as_value};

/// A member read as a string: absent, present but not a string, or its text (borrowed from
/// the line unless it holds escapes).
#[derive(Debug, Default)]
pub enum Str<'a> {
    #[default]
    Absent,
    Other,
    Text(Cow<'a, str>),
}

impl<'a> Str<'a> {
    /// The text, when the member is a string (`str_at`).
    pub fn get(&self) -> Option<&str> {
        match self {
            Str::Text(t) => Some(t),
            _ => None,
        }
    }

    /// Whether the member is there at all, whatever its type (`Value::get(..).is_some()`).
    pub fn present(&self) -> bool {
        !matches!(self, Str::Absent)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'a>, E> {
                Ok(Str::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'a>, E> {
                Ok(Str::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'a>, E> {
                Ok(Str::Text(Cow::Owned(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Str<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Str::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Str<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Str::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Str<'a>, E> {
                Ok(Str::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Str<'a>, E> {
                Ok(Str::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Str<'a>, E> {
                Ok(Str::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Str<'a>, E> {
                Ok(Str::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Str<'a>, E> {
                Ok(Str::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A member that counts when it is `true` (`Value::as_bool(..) == Some(true)`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Flag;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Flag, E> {
                Ok(Flag(v))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Flag, E> {
                Ok(Flag(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Flag, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Flag(false))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Flag, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Flag(false))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Flag, E> {
                Ok(Flag(false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Flag, E> {
                Ok(Flag(false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Flag, E> {
                Ok(Flag(false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Flag, E> {
                Ok(Flag(false))
            }
        }
        d.deserialize_any(V)
    }
}

/// A carried member: its text when it is there (`null` included).
fn present<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<&'a RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// Parses carried text into the value an update holds.
///
/// # Panics
///
/// When `raw` is not something a `Value` parse takes. Carried text comes only from lines
/// [`with_line`] let through, which are exactly those (the `agrees_with_value` tests pin it
/// against the serde_json in Cargo.lock).
pub fn value(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).expect("a member of a line that parsed")
}

/// A part of a line an update carries: the line's own text when writing the parsed value
/// would give that very text ([`canonical`]), so it is copied instead of parsed into a tree
/// and escaped again; else the parsed value.
#[derive(Debug, Clone, PartialEq)]
pub enum Carried {
    Value(Value),
    /// Compact JSON text that serde_json writes back unchanged from its parse.
    Raw(Box<str>),
    /// An array of carried parts.
    List(Vec<Carried>),
}

impl Carried {
    /// `raw` carried.
    ///
    /// # Panics
    ///
    /// As [`value`]: `raw` must come from a line [`with_line`] let through.
    pub fn of(raw: &RawValue) -> Carried {
        let text = raw.get();
        if canonical(text.as_bytes()) {
            Carried::Raw(text.into())
        } else {
            Carried::Value(value(raw))
        }
    }

    pub fn is_null(&self) -> bool {
        match self {
            Carried::Value(v) => v.is_null(),
            Carried::Raw(t) => &**t == "null",
            Carried::List(_) => false,
        }
    }

    /// The carried part as a value (parsed when it is carried as text).
    pub fn to_value(&self) -> Value {
        match self {
            Carried::Value(v) => v.clone(),
            Carried::Raw(t) => serde_json::from_str(t).expect("carried text is JSON"),
            Carried::List(items) => Value::Array(items.iter().map(Carried::to_value).collect()),
        }
    }

    /// Writes the part as compact JSON, the bytes `serde_json` writes for [`Self::to_value`].
    pub fn write(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        match self {
            Carried::Value(v) => serde_json::to_writer(&mut *w, v).map_err(std::io::Error::from),
            Carried::Raw(t) => w.write_all(t.as_bytes()),
            Carried::List(items) => {
                w.write_all(b"[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        w.write_all(b",")?;
                    }
                    item.write(w)?;
                }
                w.write_all(b"]")
            }
        }
    }
}

impl From<Value> for Carried {
    fn from(v: Value) -> Carried {
        Carried::Value(v)
    }
}

/// How many members an object may have for [`canonical`] to look for one given twice; a
/// bigger object is parsed instead (the look is quadratic).
const CANONICAL_KEYS: usize = 64;

/// Whether `text`, valid JSON, is what `serde_json` writes for the value it parses from it
/// (with object members kept in order): no whitespace between tokens, each object member once,
/// integers of at most 18 digits and no other numbers (a float's shortest spelling, or a
/// big integer read as a float, may differ), strings escaped as serde_json escapes them
/// (`\"`, `\\`, `\b \f \n \r \t`, other control characters as lower-case `\u00xx`; nothing
/// else: `\/` and other `\u` escapes are written as the character). `false` is always safe:
/// the part is then parsed and written again.
pub fn canonical(text: &[u8]) -> bool {
    // Keys of the objects being read, innermost last; `starts` holds where each open
    // object's keys begin (`usize::MAX` for an array).
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                loop {
                    i += plain_run(&text[i..]);
                    match text.get(i) {
                        None => return false,
                        Some(b'"') => break,
                        Some(b'\\') => {
                            match text.get(i + 1) {
                                Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                                Some(b'u') => {
                                    let Some(hex) = text.get(i + 2..i + 6) else {
                                        return false;
                                    };
                                    // Only a control character without a short escape, in
                                    // lower case: \u0000-\u001f less b, t, n, f, r.
                                    let lower =
                                        |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
                                    if hex[0] != b'0'
                                        || hex[1] != b'0'
                                        || !(hex[2] == b'0' || hex[2] == b'1')
                                        || !lower(hex[3])
                                        || (hex[2] == b'0'
                                            && matches!(hex[3], b'8' | b'9' | b'a' | b'c' | b'd'))
                                    {
                                        return false;
                                    }
                                    i += 6;
                                }
                                _ => return false,
                            }
                        }
                        Some(_) => i += 1,
                    }
                }
                let s = &text[start..i];
                i += 1;
                if text.get(i) == Some(&b':') {
                    let Some(&from) = starts.last().filter(|&&f| f != usize::MAX) else {
                        return false;
                    };
                    let own = &keys[from..];
                    if own.len() >= CANONICAL_KEYS || own.contains(&s) {
                        return false;
                    }
                    keys.push(s);
                    i += 1;
                }
            }
            b'{' => {
                starts.push(keys.len());
                i += 1;
            }
            b'[' => {
                starts.push(usize::MAX);
                i += 1;
            }
            b'}' | b']' => {
                if let Some(from) = starts.pop().filter(|&f| f != usize::MAX) {
                    keys.truncate(from);
                }
                i += 1;
            }
            b',' | b't' | b'r' | b'u' | b'e' | b'f' | b'a' | b'l' | b's' | b'n' => i += 1,
            b'-' | b'0'..=b'9' => {
                let start = i;
                if text[i] == b'-' {
                    i += 1;
                }
                let digits = i;
                while i < text.len() && text[i].is_ascii_digit() {
                    i += 1;
                }
                let n = i - digits;
                if n == 0 || n > 18 || (n == 1 && text[digits] == b'0' && digits > start) {
                    return false;
                }
                if matches!(text.get(i), Some(b'.' | b'e' | b'E')) {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// The members of a line the replay reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fields<'a> {
    #[serde(rename = "type", default, borrow)]
    pub kind: Str<'a>,
    #[serde(default, borrow)]
    pub uuid: Str<'a>,
    #[serde(default, borrow)]
    pub timestamp: Str<'a>,
    #[serde(default)]
    pub is_meta: Flag,
    #[serde(default)]
    pub is_compact_summary: Flag,
    #[serde(default, borrow)]
    pub permission_mode: Str<'a>,
    #[serde(default, borrow)]
    pub custom_title: Str<'a>,
    #[serde(default, borrow)]
    pub ai_title: Str<'a>,
    #[serde(default, borrow)]
    pub leaf_uuid: Str<'a>,
    #[serde(default, borrow)]
    pub summary: Str<'a>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub tool_use_result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    message: Option<Obj<Message<'a>>>,
    #[serde(default, borrow)]
    attachment: Option<Obj<Attachment<'a>>>,
}

/// `message` of a row, when it is an object.
#[derive(Debug, Default, Deserialize)]
pub struct Message<'a> {
    #[serde(default, borrow)]
    pub id: Str<'a>,
    #[serde(default, borrow)]
    pub model: Str<'a>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub usage: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub stop_reason: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    content: Option<&'a RawValue>,
}

/// `attachment` of an attachment row, when it is an object.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment<'a> {
    #[serde(rename = "type", default, borrow)]
    pub kind: Str<'a>,
    #[serde(default)]
    pub is_meta: Flag,
    #[serde(default, borrow, deserialize_with = "present")]
    pub prompt: Option<&'a RawValue>,
}

/// The members of a content block the replay reads (all absent when the block is not an
/// object).
#[derive(Debug, Default, Deserialize)]
pub struct BlockFields<'a> {
    #[serde(rename = "type", default, borrow)]
    pub kind: Str<'a>,
    #[serde(default, borrow)]
    pub text: Str<'a>,
    #[serde(default, borrow)]
    pub thinking: Str<'a>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub signature: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub id: Str<'a>,
    #[serde(default, borrow)]
    pub name: Str<'a>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub tool_use_id: Str<'a>,
    #[serde(default)]
    pub is_error: Flag,
    #[serde(default, borrow, deserialize_with = "present")]
    pub content: Option<&'a RawValue>,
}

/// One content block: what the replay reads of it, and where it is in the content (for
/// [`Line::block_value`] and [`Line::block_carried`]).
#[derive(Debug)]
pub struct Block<'a> {
    pub f: BlockFields<'a>,
    index: usize,
}

/// `message.content`.
#[derive(Debug)]
pub enum Content<'a> {
    /// A string: one text.
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
    /// Any other JSON value.
    Other(&'a RawValue),
}

/// One line read for the replay.
#[derive(Debug)]
pub struct Line<'a> {
    /// The line as it is in the file, for records carried whole.
    raw: &'a [u8],
    pub f: Fields<'a>,
    /// `message.content`, when `message` is an object that has it.
    pub content: Option<Content<'a>>,
    /// The text of each block of `message.content`, found the first time a block is carried
    /// whole (most lines carry none, and finding them is another pass over the content).
    blocks: std::cell::OnceCell<Vec<&'a RawValue>>,
    content_raw: Option<&'a RawValue>,
}

impl<'a> Line<'a> {
    /// Reads the typed view of `text`; `raw` is the line as the file has it.
    fn parse(raw: &'a [u8], text: &'a [u8]) -> serde_json::Result<Line<'a>> {
        let f: Fields<'a> = serde_json::from_slice(text)?;
        let content_raw = f
            .message
            .as_ref()
            .and_then(|m| m.0.as_ref())
            .and_then(|m| m.content);
        let content = match content_raw {
            None => None,
            Some(c) => Some(match c.get().as_bytes().first() {
                Some(b'"') => {
                    Content::Text(serde_json::from_str::<Str<'a>>(c.get()).map(|s| match s {
                        Str::Text(t) => t,
                        _ => Cow::Borrowed(""),
                    })?)
                }
                Some(b'[') => {
                    let fields: Vec<Obj<BlockFields<'a>>> = serde_json::from_str(c.get())?;
                    let blocks = fields.into_iter().enumerate();
                    Content::Blocks(
                        blocks
                            .map(|(index, f)| Block {
                                f: f.0.unwrap_or_default(),
                                index,
                            })
                            .collect(),
                    )
                }
                _ => Content::Other(c),
            }),
        };
        Ok(Line {
            raw,
            f,
            content,
            blocks: std::cell::OnceCell::new(),
            content_raw,
        })
    }

    /// The text of block `b` of this line's content.
    fn block_raw(&self, b: &Block) -> &'a RawValue {
        let all = self.blocks.get_or_init(|| {
            let content = self.content_raw.expect("a line with blocks has content");
            serde_json::from_str(content.get()).expect("content that parsed")
        });
        all[b.index]
    }

    /// Block `b` whole, parsed.
    pub fn block_value(&self, b: &Block) -> Value {
        value(self.block_raw(b))
    }

    /// Block `b` whole, as an update carries it.
    pub fn block_carried(&self, b: &Block) -> Carried {
        Carried::of(self.block_raw(b))
    }

    /// `message`, when it is an object.
    pub fn message(&self) -> Option<&Message<'a>> {
        self.f.message.as_ref().and_then(|m| m.0.as_ref())
    }

    /// `attachment`, when it is an object.
    pub fn attachment(&self) -> Option<&Attachment<'a>> {
        self.f.attachment.as_ref().and_then(|m| m.0.as_ref())
    }

    pub fn kind(&self) -> &str {
        self.f.kind.get().unwrap_or("")
    }

    /// `message.id` of an assistant row.
    pub fn message_id(&self) -> Option<&str> {
        if self.kind() != "assistant" {
            return None;
        }
        self.message().and_then(|m| m.id.get())
    }

    /// The blocks of `message.content`, when it is an array.
    pub fn blocks(&self) -> &[Block<'a>] {
        match &self.content {
            Some(Content::Blocks(b)) => b,
            _ => &[],
        }
    }

    /// Whether a user row carries tool results.
    pub fn has_tool_result(&self) -> bool {
        self.blocks()
            .iter()
            .any(|b| b.f.kind.get() == Some("tool_result"))
    }

    /// The line whole, as a record carried verbatim.
    pub fn carried(&self) -> Carried {
        match std::str::from_utf8(self.raw) {
            Ok(text) if canonical(self.raw) => Carried::Raw(text.into()),
            _ => Carried::Value(serde_json::from_slice(self.raw).expect("a line that parsed")),
        }
    }
}

/// Reads `raw` (a line the first pass parsed as a JSON object) and hands its view to `f`;
/// `None` when the line is not a JSON object after all, or not one a `Value` parse takes
/// (the replay read lines as `Value`s before, and left such lines out).
pub fn with_line<R>(raw: &[u8], f: impl FnOnce(&Line<'_>) -> R) -> Option<R> {
    // A derived struct would take an array too, its elements as the members in order.
    if raw.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    if !reads_as_value(raw) && serde_json::from_slice::<Value>(raw).is_err() {
        return None;
    }
    if let Ok(line) = Line::parse(raw, raw) {
        return Some(f(&line));
    }
    // A member given twice, or not JSON: what `Value` makes of it, written out again, holds
    // each member once (the last), as `Value::get` reads it.
    let v: Value = serde_json::from_slice(raw).ok().filter(Value::is_object)?;
    let text = serde_json::to_vec(&v).expect("a value serialises");
    Line::parse(raw, &text).ok().map(|line| f(&line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_read_as_value_get_reads_them() {
        let raw = br#"{"type":"user","uuid":"u\"1","isMeta":"yes","isCompactSummary":true,"toolUseResult":null,"message":{"id":7,"usage":null,"content":[{"type":"text","text":"hi"},"odd",{"type":"tool_result","tool_use_id":"t","is_error":1,"content":[1]}]},"attachment":[1]}"#;
        with_line(raw, |l| {
            assert_eq!(l.kind(), "user");
            assert_eq!(l.f.uuid.get(), Some("u\"1"));
            assert!(!l.f.is_meta.0 && l.f.is_compact_summary.0);
            assert_eq!(l.f.tool_use_result.map(RawValue::get), Some("null"));
            let m = l.message().unwrap();
            assert!(m.id.present() && m.id.get().is_none());
            assert_eq!(m.usage.map(RawValue::get), Some("null"));
            assert!(m.stop_reason.is_none());
            assert!(l.attachment().is_none());
            let b = l.blocks();
            assert_eq!(b.len(), 3);
            assert_eq!(b[0].f.text.get(), Some("hi"));
            assert_eq!(l.block_value(&b[1]), Value::from("odd"));
            assert_eq!(
                l.block_carried(&b[0]),
                Carried::Raw(r#"{"type":"text","text":"hi"}"#.into())
            );
            assert!(b[1].f.kind.get().is_none());
            assert!(!b[2].f.is_error.0);
            assert_eq!(b[2].f.content.map(RawValue::get), Some("[1]"));
            assert!(l.has_tool_result());
        })
        .unwrap();
    }

    /// Text is carried as it is only when serde_json would write the same text.
    #[test]
    fn canonical_text_is_what_serde_json_writes_again() {
        let same = [
            r#"{"a":1,"b":[true,false,null,-12,0],"c":{"a":"x\"\\\n\t\r\b\f\u0001\u001f"}}"#,
            "\"é\u{7f}/\"",
            r#"[{"a":1},{"a":2}]"#,
            r#"123456789012345678"#,
            r#"{}"#,
        ];
        for t in same {
            assert!(canonical(t.as_bytes()), "{t}");
            let v: Value = serde_json::from_str(t).unwrap();
            assert_eq!(serde_json::to_string(&v).unwrap(), t);
        }
        let differ = [
            r#"{"a": 1}"#,
            r#"{"a":1,"a":2}"#,
            r#""\/""#,
            r#""\u00e9""#,
            r#""\u007f""#,
            r#""\u000a""#,
            r#""\u001F""#,
            r#"1.5"#,
            r#"1e3"#,
            r#"-0"#,
            r#"1234567890123456789012"#,
            r#"[1, 2]"#,
        ];
        for t in differ {
            assert!(!canonical(t.as_bytes()), "{t}");
        }
        // Escapes at every place relative to the eight-byte steps over a string's body.
        for pad in 0..10 {
            let body = "a".repeat(pad);
            assert!(canonical(
                format!("[\"{body}\\n{body}\",\"{body}\"]").as_bytes()
            ));
            assert!(!canonical(format!("[\"{body}\\/{body}\"]").as_bytes()));
            assert!(!canonical(format!("[\"{body}\\u0041{body}\"]").as_bytes()));
        }
        // A member name may come back in another object.
        assert!(canonical(br#"{"a":{"a":1},"b":{"a":2}}"#));
        let wide: String = (0..CANONICAL_KEYS + 1)
            .map(|i| format!("\"k{i}\":1"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(!canonical(format!("{{{wide}}}").as_bytes()));
    }

    /// A line is read when, and only when, a `Value` parse takes it.
    #[test]
    fn lines_a_value_parse_refuses_are_left_out() {
        let nested = |n: usize| {
            format!(
                r#"{{"type":"user","toolUseResult":{}1{}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        let mut lines: Vec<Vec<u8>> = (120..135).map(|n| nested(n).into_bytes()).collect();
        for odd in [
            r#"{"type":"user","x":"\ud83d"}"#,
            r#"{"type":"user","x":"\ud83d\ude00"}"#,
            r#"{"type":"user","x":"\uD83D"}"#,
            r#"{"type":"user","x":1e400}"#,
            r#"{"type":"user","x":1.5e3,"y":-2.5E-3}"#,
            r#"{"type":"user","x":[1.5,-0,0.25]}"#,
            r#"{"type":"user","x":"3e5 \"[[[\" \\"}"#,
        ] {
            lines.push(odd.as_bytes().to_vec());
        }
        let mut bad = br#"{"type":"user","x":"a"}"#.to_vec();
        bad[21] = 0xff;
        lines.push(bad);
        lines.push(format!("{{\"x\":{}}}", "9".repeat(400)).into_bytes());
        for line in lines {
            let value = serde_json::from_slice::<Value>(&line).is_ok();
            let read = with_line(&line, |l| l.kind().to_owned());
            assert_eq!(read.is_some(), value, "{}", String::from_utf8_lossy(&line));
            if reads_as_value(&line) {
                assert!(value, "{}", String::from_utf8_lossy(&line));
            }
        }
    }

    #[test]
    fn a_member_given_twice_reads_as_its_last() {
        let raw = br#"{"type":"x","type":"assistant","message":{"id":"a","id":"b","content":"t"}}"#;
        let got = with_line(raw, |l| {
            assert!(matches!(&l.content, Some(Content::Text(t)) if t == "t"));
            (l.kind().to_owned(), l.message_id().map(str::to_owned))
        });
        assert_eq!(got, Some(("assistant".to_owned(), Some("b".to_owned()))));
        assert_eq!(with_line(b"[1]", |_| ()), None);
        assert_eq!(with_line(b"{\"a\":", |_| ()), None);
    }
}

#[cfg(test)]
/// Random lines and values against serde_json's own parse and writer: the views must read
/// every line as a `Value` parse does, and text [`canonical`] passes must be what serde_json
/// writes again. These pin the behaviour of the serde_json in Cargo.lock; an upgrade that
/// changes what it accepts or how it escapes fails here, not in a user's pack.
mod agrees_with_value {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn ws(r: &mut Rng, out: &mut Vec<u8>) {
        if r.below(8) == 0 {
            out.extend_from_slice([&b" "[..], b"\t", b"\n", b"\r", b"  "][r.below(5) as usize]);
        }
    }

    fn string(r: &mut Rng, out: &mut Vec<u8>) {
        out.push(b'"');
        let n = r.below(6);
        for _ in 0..n {
            let piece: &[u8] = match r.below(30) {
                0 => b"\\\"",
                1 => b"\\\\",
                2 => b"\\/",
                3 => b"\\n",
                4 => b"\\u000a",
                5 => b"\\u001F",
                6 => b"\\u001f",
                7 => b"\\u0000",
                8 => b"\\u0041",
                9 => b"\\ud83d\\ude00",
                10 => b"\\ud800",
                11 => b"\\uDC00",
                12 => "\u{e9}".as_bytes(),
                13 => b"\x7f",
                14 => "\u{2028}".as_bytes(),
                15 => b"\\u007f",
                16 => b"\\b\\f\\r\\t",
                17 => b"\\u0008",
                18 => b"\xff",
                19 => b"\\u000b",
                20 => b"0123456789abcdefghij",
                21 => b"type",
                22 => b"\\u00e9",
                23 => b"\\u2028",
                _ => b"abc",
            };
            out.extend_from_slice(piece);
        }
        out.push(b'"');
    }

    fn number(r: &mut Rng, out: &mut Vec<u8>) {
        let s: String = match r.below(16) {
            0 => "0".into(),
            1 => "-0".into(),
            2 => "123".into(),
            3 => "9".repeat(18),
            4 => "-".to_owned() + &"9".repeat(18),
            5 => "9".repeat(19),
            6 => "18446744073709551616".into(),
            7 => "1.5".into(),
            8 => "1e5".into(),
            9 => "1E400".into(),
            10 => "-0.0".into(),
            11 => "9".repeat(301),
            12 => "9".repeat(400),
            13 => "1.0".into(),
            14 => "-9223372036854775808".into(),
            _ => "42".into(),
        };
        out.extend_from_slice(s.as_bytes());
    }

    const KEYS: [&str; 14] = [
        "type",
        "text",
        "id",
        "content",
        "usage",
        "stop_reason",
        "input",
        "tool_use_id",
        "is_error",
        "signature",
        "a",
        "b",
        "model",
        "thinking",
    ];

    fn value(r: &mut Rng, depth: usize, out: &mut Vec<u8>) {
        ws(r, out);
        let k = if depth > 140 { r.below(4) } else { r.below(9) };
        match k {
            0 => out.extend_from_slice([&b"true"[..], b"false", b"null"][r.below(3) as usize]),
            1 | 2 => string(r, out),
            3 => number(r, out),
            4..=6 => {
                out.push(b'{');
                let n = r.below(5);
                for i in 0..n {
                    if i > 0 {
                        out.push(b',');
                    }
                    ws(r, out);
                    if r.below(6) == 0 {
                        string(r, out);
                    } else {
                        out.push(b'"');
                        out.extend_from_slice(KEYS[r.below(KEYS.len() as u64) as usize].as_bytes());
                        out.push(b'"');
                    }
                    ws(r, out);
                    out.push(b':');
                    value(r, depth + 1, out);
                }
                ws(r, out);
                out.push(b'}');
            }
            _ => {
                out.push(b'[');
                let n = if r.below(10) == 0 { 1 } else { r.below(4) };
                for i in 0..n {
                    if i > 0 {
                        out.push(b',');
                    }
                    // sometimes go deep
                    if r.below(40) == 0 {
                        let d = 100 + r.below(60) as usize;
                        out.extend(std::iter::repeat_n(b'[', d));
                        out.push(b'1');
                        out.extend(std::iter::repeat_n(b']', d));
                    } else {
                        value(r, depth + 1, out);
                    }
                }
                ws(r, out);
                out.push(b']');
            }
        }
        ws(r, out);
    }

    fn line(r: &mut Rng) -> Vec<u8> {
        let mut out = Vec::new();
        out.push(b'{');
        let tops = [
            "type",
            "uuid",
            "timestamp",
            "isMeta",
            "toolUseResult",
            "message",
            "attachment",
            "x",
            "isCompactSummary",
            "summary",
        ];
        let n = 1 + r.below(7);
        for i in 0..n {
            if i > 0 {
                out.push(b',');
            }
            let key = tops[r.below(tops.len() as u64) as usize];
            out.push(b'"');
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\":");
            if key == "message" && r.below(2) == 0 {
                // a message object with content blocks
                out.extend_from_slice(b"{\"id\":\"m\",\"content\":[");
                let nb = r.below(4);
                for j in 0..nb {
                    if j > 0 {
                        out.push(b',');
                    }
                    value(r, 3, &mut out);
                }
                out.extend_from_slice(b"]");
                if r.below(2) == 0 {
                    out.extend_from_slice(b",\"usage\":");
                    value(r, 2, &mut out);
                }
                out.push(b'}');
            } else if key == "type" && r.below(2) == 0 {
                out.extend_from_slice([&b"\"user\""[..], b"\"assistant\""][r.below(2) as usize]);
            } else {
                value(r, 1, &mut out);
            }
        }
        out.push(b'}');
        out
    }

    fn write(c: &Carried) -> String {
        let mut v = Vec::new();
        c.write(&mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn canonical_only_when_serde_writes_the_same() {
        let mut r = Rng(0x9e3779b97f4a7c15);
        let mut checked = 0;
        for _ in 0..30_000 {
            let mut t = Vec::new();
            value(&mut r, 0, &mut t);
            let parsed = serde_json::from_slice::<Value>(&t);
            if canonical(&t) {
                // the raw text goes out as is: it must be what serde_json writes
                if let Ok(v) = parsed {
                    checked += 1;
                    assert_eq!(
                        serde_json::to_vec(&v).unwrap(),
                        t,
                        "{}",
                        String::from_utf8_lossy(&t)
                    );
                } else {
                    // canonical but not a Value: only acceptable if not valid JSON at all
                    // or too deep
                    // (only text nested deeper than serde_json's limit, which `with_line`
                    // refuses before anything is carried)
                }
            }
        }
        assert!(checked > 1_000, "too few canonical texts: {checked}");
    }

    #[test]
    fn with_line_agrees_with_value() {
        let mut r = Rng(0x1234_5678_9abc_def1);
        let mut read = 0;
        for _ in 0..20_000 {
            let raw = line(&mut r);
            let v = serde_json::from_slice::<Value>(&raw)
                .ok()
                .filter(Value::is_object);
            let got = std::panic::catch_unwind(|| {
                with_line(&raw, |l| {
                    let mut outs: Vec<(String, Option<String>)> = vec![
                        ("kind".into(), Some(l.kind().to_owned())),
                        ("uuid".into(), l.f.uuid.get().map(str::to_owned)),
                        ("isMeta".into(), Some(l.f.is_meta.0.to_string())),
                        (
                            "tur".into(),
                            l.f.tool_use_result.map(|x| write(&Carried::of(x))),
                        ),
                        ("line".into(), Some(write(&l.carried()))),
                    ];
                    if let Some(m) = l.message() {
                        outs.push(("usage".into(), m.usage.map(|x| write(&Carried::of(x)))));
                        outs.push(("mid".into(), m.id.get().map(str::to_owned)));
                    }
                    for (i, b) in l.blocks().iter().enumerate() {
                        outs.push((format!("b{i}"), Some(write(&l.block_carried(b)))));
                        outs.push((format!("bv{i}"), Some(l.block_value(b).to_string())));
                        outs.push((format!("bt{i}"), b.f.kind.get().map(str::to_owned)));
                        outs.push((
                            format!("bc{i}"),
                            b.f.content.map(|c| write(&Carried::of(c))),
                        ));
                        outs.push((
                            format!("bcv{i}"),
                            b.f.content.map(|c| super::value(c).to_string()),
                        ));
                    }
                    outs
                })
            });
            let got = match got {
                Ok(g) => g,
                Err(_) => panic!("panicked on {}", String::from_utf8_lossy(&raw)),
            };
            assert_eq!(
                got.is_some(),
                v.is_some(),
                "{}",
                String::from_utf8_lossy(&raw)
            );
            let (Some(got), Some(v)) = (got, v) else {
                continue;
            };
            read += 1;
            let s = |x: Option<&Value>| x.map(|x| serde_json::to_string(x).unwrap());
            let msg = v.get("message").filter(|m| m.is_object());
            let mut want: Vec<(String, Option<String>)> = vec![
                (
                    "kind".into(),
                    Some(str_of(&v, "type").unwrap_or("").to_owned()),
                ),
                ("uuid".into(), str_of(&v, "uuid").map(str::to_owned)),
                (
                    "isMeta".into(),
                    Some((v.get("isMeta").and_then(Value::as_bool) == Some(true)).to_string()),
                ),
                ("tur".into(), s(v.get("toolUseResult"))),
                ("line".into(), s(Some(&v))),
            ];
            if let Some(m) = msg {
                want.push(("usage".into(), s(m.get("usage"))));
                want.push(("mid".into(), str_of(m, "id").map(str::to_owned)));
            }
            if let Some(Value::Array(bs)) = msg.and_then(|m| m.get("content")) {
                for (i, b) in bs.iter().enumerate() {
                    want.push((format!("b{i}"), s(Some(b))));
                    want.push((format!("bv{i}"), Some(b.to_string())));
                    want.push((format!("bt{i}"), str_of(b, "type").map(str::to_owned)));
                    want.push((format!("bc{i}"), s(b.get("content"))));
                    want.push((format!("bcv{i}"), b.get("content").map(|c| c.to_string())));
                }
            }
            assert_eq!(got, want, "{}", String::from_utf8_lossy(&raw));
        }
        assert!(read > 1_000, "too few lines read: {read}");
    }

    fn str_of<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
        v.get(k).and_then(Value::as_str)
    }
}
