//! References to environment variables in MCP server descriptors, in the spelling each
//! harness expands. The state keeps values literally (spec/aspstate.md §3.3), so a server read
//! from OpenCode holds `{env:GITHUB_TOKEN}` and one read from Claude Code `${GITHUB_TOKEN}`; a
//! writer respells them into its harness's form, or the harness passes the reference through
//! as text and the server fails to authenticate, with nothing said.
//!
//! - `${NAME}`: Claude Code, Gemini CLI, Qwen Code and Copilot CLI ([`Spelling::Dollar`]);
//! - `{env:NAME}`: OpenCode, which substitutes it anywhere in its configuration file
//!   ([`Spelling::Braces`]).
//!
//! Only the plain forms are respelled (`NAME` is `[A-Za-z_][A-Za-z0-9_]*`): `${NAME:-default}`
//! has no OpenCode form and is left as it is, as is any other text.
//!
//! Gemini CLI and Qwen Code also expand a bare `$NAME` in their settings file, which the
//! others take as text. A server read from one of them that holds such a reference is marked
//! (`_meta.asp.bareEnvRefs`, [`mark_bare`]): its bare references are references, respelled
//! `${NAME}` first wherever it is written. Unmarked (read from a harness that does not expand
//! them: a Claude Code password `p$ss`), a `$` is text and stays (new-user trial helper-131,
//! 5: Qwen's `Bearer $WEB_TOKEN` went into OpenCode as those words).

use std::borrow::Cow;

use asp_format::state::{McpServer, NameValue};
use serde_json::Value;

/// How a harness spells a reference to an environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// `${NAME}`.
    Dollar,
    /// `{env:NAME}`.
    Braces,
}

fn is_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c == b'_' || c.is_ascii_alphabetic())
        && b.all(|c| c == b'_' || c.is_ascii_alphanumeric())
}

/// `value` with every plain reference in the other spelling written in `to`'s.
pub fn respell(value: &str, to: Spelling) -> Cow<'_, str> {
    let (open, other) = match to {
        Spelling::Dollar => ("{env:", "${"),
        Spelling::Braces => ("${", "{env:"),
    };
    if !value.contains(open) {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len() + 8);
    let mut rest = value;
    while let Some(at) = rest.find(open) {
        let after = &rest[at + open.len()..];
        match after.find('}') {
            Some(end) if is_name(&after[..end]) => {
                out.push_str(&rest[..at]);
                out.push_str(other);
                out.push_str(&after[..end]);
                out.push('}');
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[..at + open.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The member of `_meta.asp` that marks a server whose bare `$NAME`s are references.
const BARE: &str = "bareEnvRefs";

/// `value` with each bare `$NAME` (not `${`, not `$$`) written `${NAME}`.
fn braced(value: &str) -> Cow<'_, str> {
    if !value.contains('$') {
        return Cow::Borrowed(value);
    }
    let b = value.as_bytes();
    let mut out = String::with_capacity(value.len() + 4);
    let mut i = 0;
    let mut changed = false;
    while i < b.len() {
        if b[i] == b'$' && (i == 0 || b[i - 1] != b'$') {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && (b[end] == b'_' || b[end].is_ascii_alphanumeric()) {
                end += 1;
            }
            if end > start && is_name(&value[start..end]) {
                out.push_str("${");
                out.push_str(&value[start..end]);
                out.push('}');
                i = end;
                changed = true;
                continue;
            }
        }
        let c = value[i..].chars().next().expect("inside the string");
        out.push(c);
        i += c.len_utf8();
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(value)
    }
}

/// The values of `server` (command, arguments, URL, env and header values).
fn values(server: &McpServer) -> Vec<&str> {
    match server {
        McpServer::Stdio(x) => std::iter::once(x.command.as_str())
            .chain(x.args.iter().map(String::as_str))
            .chain(x.env.iter().map(|nv| nv.value.as_str()))
            .collect(),
        McpServer::Http(r) | McpServer::Sse(r) => std::iter::once(r.url.as_str())
            .chain(r.headers.iter().map(|nv| nv.value.as_str()))
            .collect(),
    }
}

/// Marks `server`, read from a harness that expands a bare `$NAME`, when one of its values
/// holds one (`_meta.asp.bareEnvRefs`).
pub fn mark_bare(server: &mut McpServer) {
    if values(server).iter().any(|v| braced(v) != *v) {
        crate::kit::meta::asp_mut(server.meta_mut()).insert(BARE.into(), true.into());
    }
}

/// `server` with the references of its command, arguments, URL, env and header values in
/// `to`'s spelling (its bare `$NAME`s too, when [`mark_bare`] marked it).
pub fn respelled(server: &McpServer, to: Spelling) -> McpServer {
    respelled_for(server, to, false)
}

/// [`respelled`] for a harness that expands a bare `$NAME` itself (`expands_bare`: Gemini
/// CLI, Qwen Code), which gets them as they are.
pub fn respelled_for(server: &McpServer, to: Spelling, expands_bare: bool) -> McpServer {
    let bare = !expands_bare
        && crate::kit::meta::asp(server.meta())
            .and_then(|a| a.get(BARE))
            .and_then(Value::as_bool)
            .unwrap_or(false);
    let s = |v: &str| match bare {
        true => respell(&braced(v), to).into_owned(),
        false => respell(v, to).into_owned(),
    };
    let pairs = |list: &[NameValue]| -> Vec<NameValue> {
        list.iter()
            .map(|nv| NameValue {
                name: nv.name.clone(),
                value: s(&nv.value),
            })
            .collect()
    };
    let mut out = server.clone();
    match &mut out {
        McpServer::Stdio(x) => {
            x.command = s(&x.command);
            x.args = x.args.iter().map(|a| s(a)).collect();
            x.env = pairs(&x.env);
        }
        McpServer::Http(r) | McpServer::Sse(r) => {
            r.url = s(&r.url);
            r.headers = pairs(&r.headers);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_references_change_spelling_and_nothing_else_does() {
        assert_eq!(
            respell("Bearer ${LINEAR_API_KEY}", Spelling::Braces),
            "Bearer {env:LINEAR_API_KEY}"
        );
        assert_eq!(
            respell("{env:A}:{env:_b2}", Spelling::Dollar),
            "${A}:${_b2}"
        );
        for kept in [
            "${A:-x}",
            "${1A}",
            "{env:}",
            "${",
            "price: $5 {env:A B}",
            "plain",
        ] {
            assert_eq!(respell(kept, Spelling::Braces), kept);
            assert_eq!(respell(kept, Spelling::Dollar), kept);
        }
        // Each spelling is its own harness's: left as it is.
        assert_eq!(respell("${A}", Spelling::Dollar), "${A}");
        assert_eq!(respell("{env:A}", Spelling::Braces), "{env:A}");
    }

    /// A bare `$NAME` is a reference only where the server came from a harness that expands
    /// it (marked); then it is respelled as the braced forms are, else it stays text.
    #[test]
    fn bare_references_are_respelled_only_when_marked() {
        use asp_format::state::{McpRemote, McpServer};
        let mut server = McpServer::Http(McpRemote {
            name: "web".into(),
            url: "https://x.example/mcp".into(),
            headers: vec![NameValue {
                name: "Authorization".into(),
                value: "Bearer $WEB_TOKEN, $$KEEP, ${OTHER}, $5, $".into(),
            }],
            meta: None,
        });
        let header = |s: &McpServer| match s {
            McpServer::Http(r) => r.headers[0].value.clone(),
            _ => unreachable!(),
        };
        let unmarked = respelled(&server, Spelling::Braces);
        assert_eq!(
            header(&unmarked),
            "Bearer $WEB_TOKEN, $$KEEP, {env:OTHER}, $5, $"
        );
        mark_bare(&mut server);
        assert_eq!(
            header(&respelled(&server, Spelling::Braces)),
            "Bearer {env:WEB_TOKEN}, $$KEEP, {env:OTHER}, $5, $"
        );
        assert_eq!(
            header(&respelled(&server, Spelling::Dollar)),
            "Bearer ${WEB_TOKEN}, $$KEEP, ${OTHER}, $5, $"
        );
    }
}
