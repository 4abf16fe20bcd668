//! `workspace.yaml`: a session's flat YAML header (spec §2), keys in Copilot's order: `id`,
//! `cwd`, `git_root`, `branch`, `client_name`, `name` (the title), `user_named`,
//! `summary_count`, `fork_count`, `created_at`, `updated_at`.
//!
//! Copilot writes plain scalars, one `key: value` a line; `asp` writes a value YAML would
//! misread (a `: ` inside, a leading quote) double-quoted, in JSON's escapes, which YAML's
//! double-quoted style shares.

/// The fields a converter uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workspace {
    pub id: Option<String>,
    pub cwd: Option<String>,
    pub git_root: Option<String>,
    pub branch: Option<String>,
    pub name: Option<String>,
    pub user_named: bool,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

impl Workspace {
    /// Reads the keys it knows with a YAML parser (other keys are ignored, as Copilot ignores
    /// them); the parser's message when the file is not a YAML mapping.
    pub fn parse(text: &str) -> Result<Workspace, String> {
        use serde_json::{Map, Value};
        let m = serde_saphyr::from_str::<Map<String, Value>>(text).map_err(|e| e.to_string())?;
        let s = |k: &str| match m.get(k) {
            Some(Value::String(v)) if !v.is_empty() => Some(v.clone()),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Some(v.to_string()),
            _ => None,
        };
        Ok(Workspace {
            id: s("id"),
            cwd: s("cwd"),
            git_root: s("git_root"),
            branch: s("branch"),
            name: s("name"),
            user_named: m
                .get("user_named")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            created_at: s("created_at"),
            updated_at: s("updated_at"),
        })
    }

    /// The file as Copilot writes it, for a session `asp` composes (no client, no forks).
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Booleans and counts are written plain: Copilot requires `user_named` to be a boolean.
        let mut put = |k: &str, v: &str, quote: bool| {
            out.push_str(k);
            out.push_str(": ");
            out.push_str(&if quote { quoted(v) } else { v.to_owned() });
            out.push('\n');
        };
        if let Some(v) = &self.id {
            put("id", &text(v), false);
        }
        if let Some(v) = &self.cwd {
            put("cwd", &text(v), false);
        }
        if let Some(v) = &self.git_root {
            put("git_root", &text(v), false);
        }
        if let Some(v) = &self.branch {
            put("branch", &text(v), false);
        }
        if let Some(v) = &self.name {
            put("name", &text(v), false);
        }
        put(
            "user_named",
            if self.user_named { "true" } else { "false" },
            false,
        );
        put("summary_count", "0", false);
        put("fork_count", "0", false);
        if let Some(v) = &self.created_at {
            put("created_at", v, true);
        }
        if let Some(v) = &self.updated_at {
            put("updated_at", v, true);
        }
        out
    }
}

/// `v` as a plain scalar when YAML reads it back unchanged, else double-quoted.
fn quoted(v: &str) -> String {
    let plain = !v.is_empty()
        && !v.contains(": ")
        && !v.contains(" #")
        && !v.ends_with(':')
        && !v.starts_with(|c: char| "\"'&*!|>%@`#{}[],-?:".contains(c) || c.is_whitespace())
        && !v.ends_with(char::is_whitespace)
        && !v.chars().any(char::is_control)
        && !matches!(
            v,
            "true" | "false" | "null" | "~" | "yes" | "no" | "on" | "off"
        )
        && v.parse::<f64>().is_err();
    if plain || is_time_or_number(v) {
        v.to_owned()
    } else {
        serde_json::to_string(v).expect("a string serialises")
    }
}

/// A value that is text (an id, a folder, a branch, a name): quoted when it would read as a
/// number or a time, which a branch named `1234` or a session named `2026` would.
fn text(v: &str) -> String {
    match is_time_or_number(v) {
        true => serde_json::to_string(v).expect("a string serialises"),
        false => quoted(v),
    }
}

/// Copilot writes its times and counts plain.
fn is_time_or_number(v: &str) -> bool {
    crate::kit::time::parse(v).is_some() || v.bytes().all(|b| b.is_ascii_digit()) && !v.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samples_header_reads_and_a_title_with_a_colon_round_trips() {
        let w = Workspace::parse(
            "id: cb3f\ncwd: /home/dev/shop\nbranch: main\nname: Rename total_cents (tests left alone)\nuser_named: true\nsummary_count: 0\ncreated_at: 2026-12-02T00:18:37.729Z\n",
        )
        .unwrap();
        assert_eq!(w.id.as_deref(), Some("cb3f"));
        assert_eq!(
            w.name.as_deref(),
            Some("Rename total_cents (tests left alone)")
        );
        assert!(w.user_named);
        let odd = Workspace {
            id: Some("x".into()),
            name: Some("Fix: the \"cart\" # now ~copilot".into()),
            created_at: Some("2026-12-02T00:18:37.729Z".into()),
            ..Workspace::default()
        };
        let text = odd.render();
        assert!(
            text.contains("created_at: 2026-12-02T00:18:37.729Z\n"),
            "{text}"
        );
        assert_eq!(Workspace::parse(&text).unwrap().name, odd.name);
        assert_eq!(
            Workspace::parse("name: 'it''s'\n").unwrap().name.as_deref(),
            Some("it's")
        );
        assert!(Workspace::parse("[not, a, map]").is_err());
    }

    /// A branch or a name that would read as a number or a time is written quoted, so YAML
    /// gives it back as text; times of the workspace itself stay plain, as Copilot writes them.
    #[test]
    fn text_that_looks_like_a_number_or_a_time_is_quoted() {
        let w = Workspace {
            id: Some("x".into()),
            branch: Some("1234".into()),
            name: Some("2026-12-02T00:18:37.729Z".into()),
            created_at: Some("2026-12-02T00:18:37.729Z".into()),
            ..Workspace::default()
        };
        let text = w.render();
        assert!(text.contains("branch: \"1234\"\n"), "{text}");
        assert!(
            text.contains("name: \"2026-12-02T00:18:37.729Z\"\n")
                && text.contains("created_at: 2026-12-02T00:18:37.729Z\n"),
            "{text}"
        );
        let back = Workspace::parse(&text).unwrap();
        assert_eq!((back.branch, back.name), (w.branch, w.name));
    }
}
