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

use std::borrow::Cow;

use asp_format::state::{McpServer, NameValue};

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

/// `server` with the references of its command, arguments, URL, env and header values in
/// `to`'s spelling.
pub fn respelled(server: &McpServer, to: Spelling) -> McpServer {
    let s = |v: &str| respell(v, to).into_owned();
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
}
