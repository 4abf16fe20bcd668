//! `--map-path OLD=NEW`: moving carried state to a machine where paths differ.
//!
//! A string is rewritten when it *is* a path under `OLD`: exactly `OLD`, `OLD/...`, or the
//! same as a `file://` URI; in a string of several lines, each line that is one (a tool's
//! list of files). Prose that merely mentions a path is left alone; rewriting inside text
//! would change what the user and the agent said.

use std::io::{BufReader, Read};
use std::str::FromStr;

use asp_format::blob::{BlobSink, BlobSource};
use asp_format::state::{FileEntry, Native, State};
use asp_format::update::{MAX_LINE, UpdateLines, UpdateWriter, read_line_bounded};
use serde_json::Value;

use crate::error::ConvertError;

/// Path prefix rewrites, longest prefix first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathMap {
    rules: Vec<(String, String)>,
}

/// A rule that is not `OLD=NEW` with both sides absolute paths.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--map-path {0:?} is not OLD=NEW with both sides absolute paths")]
pub struct BadRule(pub String);

/// Whether `s` is an absolute path, POSIX (`/home/me`) or Windows (`C:\Users\me`, `C:/x`,
/// `\\server\share`): a session's working directory is one, and a relative NEW would make
/// `cd relative/path` resume lines and project directories named after it.
fn is_absolute(s: &str) -> bool {
    let b = s.as_bytes();
    s.starts_with('/')
        || s.starts_with("\\\\")
        || (b.len() >= 3
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && matches!(b[2], b'/' | b'\\'))
}

/// Whether `s` is a Windows path that separates with backslashes (`C:\Users\me`,
/// `\\server\share`): the rest of a path mapped to or from it is written in its separator.
fn backslashed(s: &str) -> bool {
    !s.starts_with('/') && s.contains('\\')
}

fn trim_slash(s: &str) -> &str {
    if s.len() > 1 {
        s.trim_end_matches('/')
    } else {
        s
    }
}

impl FromStr for PathMap {
    type Err = BadRule;

    /// One rule, `OLD=NEW`.
    fn from_str(s: &str) -> Result<Self, BadRule> {
        let mut map = PathMap::default();
        map.add(s)?;
        Ok(map)
    }
}

impl PathMap {
    /// Adds a rule `OLD=NEW`.
    pub fn add(&mut self, rule: &str) -> Result<(), BadRule> {
        let (old, new) = rule
            .split_once('=')
            .filter(|(o, n)| is_absolute(o) && is_absolute(n))
            .ok_or_else(|| BadRule(rule.to_owned()))?;
        self.rules
            .push((trim_slash(old).to_owned(), trim_slash(new).to_owned()));
        self.rules
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.cmp(b)));
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules, `(OLD, NEW)`, in the order given: for a converter that names folders after
    /// paths (Claude Code's project buckets) and must map such a name as the path would be.
    pub fn rules(&self) -> impl Iterator<Item = (&str, &str)> {
        self.rules.iter().map(|(o, n)| (o.as_str(), n.as_str()))
    }

    /// The rules (`OLD=NEW`) under whose `OLD` none of `dirs` is: with sessions' working
    /// directories, a mistyped `OLD` (`/home/de` for `/home/dev`), which would otherwise
    /// rewrite nothing without a word.
    pub fn unused<'a>(&self, dirs: impl IntoIterator<Item = &'a str> + Clone) -> Vec<String> {
        self.rules
            .iter()
            .filter(|(old, _)| {
                let one = PathMap {
                    rules: vec![(old.clone(), String::new())],
                };
                !dirs.clone().into_iter().any(|d| one.map_path(d).is_some())
            })
            .map(|(old, new)| format!("{old}={new}"))
            .collect()
    }

    /// The rewritten path, if `s` is a path under one of the rules' `OLD`. Text of several
    /// lines is not a path; each of its lines that is one is rewritten (a tool's list of
    /// files, one a line), and the others are left alone, as prose is.
    pub fn map_path(&self, s: &str) -> Option<String> {
        if s.contains('\n') {
            let mut changed = false;
            let lines: Vec<String> = s
                .split('\n')
                .map(|line| {
                    let (path, cr) = match line.strip_suffix('\r') {
                        Some(p) => (p, "\r"),
                        None => (line, ""),
                    };
                    match self.map_path(path) {
                        Some(m) => {
                            changed = true;
                            format!("{m}{cr}")
                        }
                        None => line.to_owned(),
                    }
                })
                .collect();
            return changed.then(|| lines.join("\n"));
        }
        if let Some(rest) = s.strip_prefix("file://") {
            return self.map_path(rest).map(|p| format!("file://{p}"));
        }
        for (old, new) in &self.rules {
            if s == old {
                return Some(new.clone());
            }
            let rest = if old == "/" {
                s.starts_with('/').then_some(s)
            } else {
                s.strip_prefix(old.as_str())
                    .filter(|r| r.starts_with('/') || (backslashed(old) && r.starts_with('\\')))
            };
            if let Some(rest) = rest {
                // The rest in NEW's separator: `/home/dev=C:\Users\me` maps `/home/dev/notes` to
                // `C:\Users\me\notes`, not `C:\Users\me/notes`; and back.
                let rest = match (backslashed(old), backslashed(new)) {
                    (false, true) => rest.replace('/', "\\"),
                    (true, false) => rest.replace('\\', "/"),
                    _ => rest.to_owned(),
                };
                return Some(format!("{new}{rest}"));
            }
        }
        None
    }

    /// The paths a rule maps to `s`: what `s` was before the move (for a writer that finds a
    /// native file's folder named after the old path, as Pi names its per-cwd folders).
    pub fn sources_of(&self, s: &str) -> Vec<String> {
        self.rules
            .iter()
            .filter_map(|(old, new)| {
                if s == new {
                    return Some(old.clone());
                }
                let rest = if new == "/" {
                    s.starts_with('/').then_some(s)
                } else {
                    s.strip_prefix(new.as_str())
                        .filter(|r| r.starts_with('/') || (backslashed(new) && r.starts_with('\\')))
                }?;
                // The inverse of [`PathMap::map_path`]: the rest back in OLD's separator.
                let rest = match (backslashed(new), backslashed(old)) {
                    (true, false) => rest.replace('\\', "/"),
                    (false, true) => rest.replace('/', "\\"),
                    _ => rest.to_owned(),
                };
                Some(if old == "/" {
                    rest
                } else {
                    format!("{old}{rest}")
                })
            })
            .collect()
    }

    /// The rules' `OLD` folders that `text` names (the folder itself or a path under it, as a
    /// whole path: not inside a longer one or a URL), in rule order: what a file written as it
    /// is still names after the move.
    pub fn old_folders_in(&self, text: &str) -> Vec<&str> {
        let name_char = |c: char| c.is_alphanumeric() || "-_.".contains(c);
        self.rules
            .iter()
            .map(|(old, _)| old.as_str())
            .filter(|old| {
                *old != "/"
                    && text.match_indices(old).any(|(at, _)| {
                        let before = text[..at].chars().next_back();
                        let after = text[at + old.len()..].chars().next();
                        before.is_none_or(|c| !(name_char(c) || "/:".contains(c)))
                            && after.is_none_or(|c| !name_char(c))
                    })
            })
            .collect()
    }

    /// Rewrites every string in `v` that is a mapped path; true if anything changed.
    pub fn map_json(&self, v: &mut Value) -> bool {
        match v {
            Value::String(s) => match self.map_path(s) {
                Some(m) => {
                    *s = m;
                    true
                }
                None => false,
            },
            Value::Array(a) => a.iter_mut().fold(false, |acc, x| self.map_json(x) | acc),
            Value::Object(o) => o.values_mut().fold(false, |acc, x| self.map_json(x) | acc),
            _ => false,
        }
    }

    /// Rewrites one JSON line (compact); lines that are not JSON are kept as they are.
    pub fn map_json_line(&self, line: &str) -> String {
        match serde_json::from_str::<Value>(line) {
            Ok(mut v) => {
                if self.map_json(&mut v) {
                    serde_json::to_string(&v).expect("a parsed value serialises")
                } else {
                    line.to_owned()
                }
            }
            Err(_) => line.to_owned(),
        }
    }

    /// The state with every path rewritten: session `cwd`, strings in updates, native `.json`
    /// and `.jsonl` files, and memory origins' `project`. Rewritten bodies go into `sink`;
    /// read the result through an [`asp_format::blob::Overlay`] of `sink` and `source`.
    pub fn apply(
        &self,
        state: &State,
        source: &dyn BlobSource,
        sink: &dyn BlobSink,
    ) -> Result<State, ConvertError> {
        let mut out = state.clone();
        if self.is_empty() {
            return Ok(out);
        }
        for s in out.sessions.iter_mut().flatten() {
            if let Some(cwd) = s.cwd.as_deref().and_then(|c| self.map_path(c)) {
                s.cwd = Some(cwd);
            }
            s.updates = self.rewrite_lines(source, sink, &s.updates)?;
            if let Some(native) = &mut s.native {
                *native = Native {
                    harness: native.harness.clone(),
                    files: native
                        .files
                        .iter()
                        .map(|f| self.rewrite_file(source, sink, f))
                        .collect::<Result<_, _>>()?,
                };
            }
        }
        for n in out.memory.iter_mut().flatten() {
            if let Some(p) = n.origin.project.as_deref().and_then(|p| self.map_path(p)) {
                n.origin.project = Some(p);
            }
        }
        for server in out.tools.iter_mut().flatten() {
            self.map_server(server);
        }
        Ok(out)
    }

    /// Rewrites the paths a stdio MCP server runs from: its command, each argument (the value
    /// of a `--flag=PATH` too) and each environment value that is a mapped path. A server that
    /// runs a script from the old home would otherwise be restored pointing at a folder that
    /// is not on the new machine (found by a new user's trial).
    pub fn map_server(&self, server: &mut asp_format::state::McpServer) {
        let asp_format::state::McpServer::Stdio(s) = server else {
            return;
        };
        let map_word = |w: &mut String| {
            let mapped = match crate::kit::server_files::flag_value(w) {
                Some((flag, value)) => self.map_path(value).map(|v| format!("{flag}={v}")),
                None => self.map_path(w),
            };
            if let Some(m) = mapped {
                *w = m;
            }
        };
        map_word(&mut s.command);
        s.args.iter_mut().for_each(map_word);
        for e in &mut s.env {
            if let Some(m) = self.map_path(&e.value) {
                e.value = m;
            }
        }
        // The folder a harness starts it in, which each keeps under its own `_meta` key.
        for own in s.meta.iter_mut().flat_map(|m| m.values_mut()) {
            if let Some(Value::String(cwd)) = own.get_mut("cwd")
                && let Some(m) = self.map_path(cwd)
            {
                *cwd = m;
            }
        }
    }

    /// The paths [`PathMap::map_server`] would look at in `server`: what counts a rule as used.
    pub fn server_paths(server: &asp_format::state::McpServer) -> Vec<&str> {
        let asp_format::state::McpServer::Stdio(s) = server else {
            return Vec::new();
        };
        std::iter::once(s.command.as_str())
            .chain(s.args.iter().map(|a| {
                crate::kit::server_files::flag_value(a).map_or(a.as_str(), |(_, value)| value)
            }))
            .chain(s.env.iter().map(|e| e.value.as_str()))
            .chain(
                s.meta
                    .iter()
                    .flat_map(|m| m.values())
                    .filter_map(|own| own.get("cwd").and_then(Value::as_str)),
            )
            .collect()
    }

    fn rewrite_lines(
        &self,
        source: &dyn BlobSource,
        sink: &dyn BlobSink,
        blob: &asp_format::Descriptor,
    ) -> Result<asp_format::Descriptor, ConvertError> {
        let mut lines = UpdateLines::open(source, blob)?;
        let mut w = UpdateWriter::new(sink)?;
        while let Some((_, line)) = lines
            .next_line()
            .map_err(|(_, e)| asp_format::blob::BlobError::Other(e))?
        {
            w.push_raw(&self.map_json_line(line))?;
        }
        Ok(w.finish()?)
    }

    /// `text`, a YAML document, with each `key: VALUE` line whose value is a path under a
    /// rule's old folder rewritten (plain, or quoted as it was); `None` when no line is.
    /// Line by line, so every other byte stays (Copilot CLI's `workspace.yaml`: its `cwd` and
    /// `git_root` are where it lists the session; left as they were, a session restored with
    /// `--map-path` was listed under the old folder: new-user trial helper-131, 2).
    pub fn map_yaml(&self, text: &str) -> Option<String> {
        let mut changed = false;
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let body = line.strip_suffix('\n').unwrap_or(line);
            let body = body.strip_suffix('\r').unwrap_or(body);
            let nl = &line[body.len()..];
            match self.map_yaml_line(body) {
                Some(mapped) => {
                    changed = true;
                    out.push_str(&mapped);
                    out.push_str(nl);
                }
                None => out.push_str(line),
            }
        }
        changed.then_some(out)
    }

    /// One top-level `key: VALUE` line of [`PathMap::map_yaml`], mapped, or `None`. Only a
    /// key at the start of its line, with a scalar value on it: an indented line may be inside
    /// a block scalar (text, not a path), and a flow collection (`{…}`, `[…]`) or a block
    /// scalar's header (`|`, `>`) is not one value (review helper-134, 5).
    fn map_yaml_line(&self, line: &str) -> Option<String> {
        let (key, value) = line.split_once(": ")?;
        if key.is_empty()
            || key.starts_with([' ', '\t', '#', '-'])
            || key.contains([' ', '"', '\''])
        {
            return None;
        }
        let value = value.trim_end();
        if value.starts_with(['{', '[', '|', '>', '&', '*', '!']) {
            return None;
        }
        let (plain, quote) = match value.as_bytes().first() {
            Some(b'"') => (serde_json::from_str::<String>(value).ok()?, Some('"')),
            Some(b'\'') => (
                value
                    .strip_prefix('\'')?
                    .strip_suffix('\'')?
                    .replace("''", "'"),
                Some('\''),
            ),
            _ if value.contains(" #") => return None,
            _ => (value.to_owned(), None),
        };
        let mapped = self.map_path(&plain)?;
        let needs_quotes = mapped.contains(": ")
            || mapped.contains(" #")
            || mapped.starts_with(['!', '&', '*', '[', '{', '|', '>', '%', '@', '`', '"', '\'']);
        let rendered = match quote {
            Some('\'') => format!("'{}'", mapped.replace('\'', "''")),
            Some(_) => serde_json::to_string(&mapped).expect("a string serialises"),
            None if needs_quotes => serde_json::to_string(&mapped).expect("a string serialises"),
            None => mapped,
        };
        Some(format!("{key}: {rendered}"))
    }

    /// File `f` with its paths rewritten into `sink` (streamed line by line for `.jsonl`, a
    /// `.json` document whole, anything else as it is): a session's native file, a prompt
    /// history restored with the configuration.
    pub fn rewrite_file(
        &self,
        source: &dyn BlobSource,
        sink: &dyn BlobSink,
        f: &FileEntry,
    ) -> Result<FileEntry, ConvertError> {
        let name = f.path.as_str();
        let content = if name.ends_with(".jsonl") {
            let mut reader = BufReader::new(source.open(&f.content)?);
            let mut w = sink.begin()?;
            let mut line = Vec::new();
            loop {
                line.clear();
                let n = read_line_bounded(&mut reader, &mut line, MAX_LINE)
                    .map_err(asp_format::blob::BlobError::Other)?;
                if n == 0 {
                    break;
                }
                let (body, nl): (&[u8], &[u8]) = match line.strip_suffix(b"\n") {
                    Some(b) => (b, b"\n"),
                    None => (&line, b""),
                };
                // A line that is not UTF-8 JSON is kept byte for byte.
                let mapped = match std::str::from_utf8(body) {
                    Ok(text) => std::borrow::Cow::Owned(self.map_json_line(text).into_bytes()),
                    Err(_) => std::borrow::Cow::Borrowed(body),
                };
                w.write_all(&mapped)
                    .and_then(|_| w.write_all(nl))
                    .map_err(asp_format::blob::BlobError::Other)?;
            }
            w.finish()?
        } else if name.ends_with(".json") {
            let mut bytes = Vec::new();
            source
                .open(&f.content)?
                .read_to_end(&mut bytes)
                .map_err(asp_format::blob::BlobError::Other)?;
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(mut v) if !bytes.is_empty() => {
                    if self.map_json(&mut v) {
                        let mut out = serde_json::to_vec_pretty(&v).expect("serialises");
                        if bytes.ends_with(b"\n") {
                            out.push(b'\n');
                        }
                        sink.put(&out)?
                    } else {
                        f.content
                    }
                }
                _ => f.content,
            }
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            let mut bytes = Vec::new();
            source
                .open(&f.content)?
                .read_to_end(&mut bytes)
                .map_err(asp_format::blob::BlobError::Other)?;
            match std::str::from_utf8(&bytes)
                .ok()
                .and_then(|t| self.map_yaml(t))
            {
                Some(mapped) => sink.put(mapped.as_bytes())?,
                None => f.content,
            }
        } else {
            f.content
        };
        Ok(FileEntry {
            path: f.path.clone(),
            executable: f.executable,
            content,
        })
    }
}

use std::io::Write as _;

impl asp_format::Classify for BadRule {
    fn class(&self) -> asp_format::ErrorClass {
        asp_format::ErrorClass::Usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map() -> PathMap {
        let mut m = PathMap::default();
        m.add("/home/dev=/Users/dev").unwrap();
        m.add("/home/dev/shop=/work/shop/").unwrap();
        m
    }

    /// A YAML document's `key: PATH` lines move, plain or quoted as they were; every other
    /// byte stays, its line ends and comments too.
    #[test]
    fn a_yaml_documents_paths_move_line_by_line() {
        let text = "id: 4d6db0b9\r\ncwd: /home/dev/shop\r\ngit_root: \"/home/dev/shop\"\nbranch: main\n\
                    name: 'the /home/dev/shop tests'\nother: '/home/dev/it''s'\n# cwd: /home/dev\n\
                    note: /home/dev/x # a comment\nlast: /home/dev/notes";
        let out = map().map_yaml(text).unwrap();
        assert_eq!(
            out,
            "id: 4d6db0b9\r\ncwd: /work/shop\r\ngit_root: \"/work/shop\"\nbranch: main\n\
             name: 'the /home/dev/shop tests'\nother: '/Users/dev/it''s'\n# cwd: /home/dev\n\
             note: /home/dev/x # a comment\nlast: /Users/dev/notes"
        );
        assert_eq!(map().map_yaml("branch: main\n"), None);
        // Only top-level scalars: not a block scalar's text, a list item, a flow mapping.
        for kept in [
            "name: |-\n  cwd: /home/dev/x\n",
            "paths:\n  - /home/dev/x\n- cwd: /home/dev/x\n",
            "pair: {cwd: /home/dev/x, a: b}\n",
            "nested:\n  cwd: /home/dev/x\n",
        ] {
            assert_eq!(map().map_yaml(kept), None, "{kept}");
        }
    }

    /// A server that runs a script from the old home runs it from the new one: its command,
    /// its arguments (a `--flag=PATH` value too) and its environment's paths move; other
    /// words, a remote server's URL, stay.
    #[test]
    fn an_mcp_servers_paths_move_with_the_rest() {
        use asp_format::state::{McpRemote, McpServer, McpStdio, NameValue};
        let mut local = McpServer::Stdio(McpStdio {
            name: "issues".to_owned(),
            command: "/home/dev/.venv/bin/python".to_owned(),
            args: vec![
                "/home/dev/.copilot/mcp/issues.py".to_owned(),
                "--db=/home/dev/shop/issues.db".to_owned(),
                "--verbose".to_owned(),
                "key=/home/dev/x".to_owned(),
            ],
            env: vec![NameValue {
                name: "CACHE".to_owned(),
                value: "/home/dev/.cache/issues".to_owned(),
            }],
            meta: json!({"copilot": {"cwd": "/home/dev/shop", "tools": ["*"]}})
                .as_object()
                .cloned(),
        });
        map().map_server(&mut local);
        let McpServer::Stdio(s) = &local else {
            unreachable!()
        };
        assert_eq!(s.command, "/Users/dev/.venv/bin/python");
        assert_eq!(
            s.args,
            [
                "/Users/dev/.copilot/mcp/issues.py",
                "--db=/work/shop/issues.db",
                "--verbose",
                "key=/home/dev/x"
            ]
        );
        assert_eq!(s.env[0].value, "/Users/dev/.cache/issues");
        assert_eq!(
            s.meta.as_ref().unwrap()["copilot"],
            json!({"cwd": "/work/shop", "tools": ["*"]})
        );
        let remote = McpServer::Http(McpRemote {
            name: "docs".to_owned(),
            url: "https://example.com/home/dev".to_owned(),
            headers: Vec::new(),
            meta: None,
        });
        let mut moved = remote.clone();
        map().map_server(&mut moved);
        assert_eq!(moved, remote);
    }

    /// A path mapped to a Windows folder is written in its separator, and one mapped from it
    /// in the POSIX one: `C:\Users\me\notes`, never `C:\Users\me/notes` (found by a new
    /// user's trial); a Windows folder written with `/` keeps `/`.
    #[test]
    fn a_path_mapped_across_systems_takes_the_new_folders_separator() {
        let mut m = PathMap::default();
        m.add(r"/home/dev=C:\Users\me").unwrap();
        m.add(r"D:\work=/srv/work").unwrap();
        m.add("E:/x=/y").unwrap();
        assert_eq!(
            m.map_path("/home/dev/notes/a.md").as_deref(),
            Some(r"C:\Users\me\notes\a.md")
        );
        assert_eq!(
            m.map_path(r"D:\work\shop\src").as_deref(),
            Some("/srv/work/shop/src")
        );
        assert_eq!(m.map_path(r"D:\workshop"), None, "a whole folder name");
        assert_eq!(m.map_path("E:/x/z").as_deref(), Some("/y/z"));
        assert_eq!(m.map_path(r"C:\Users\me"), None, "NEW is not an OLD");
        // And back, exactly: what a writer that finds a session by its old path asks.
        for (from, to) in [
            ("/home/dev/notes/a.md", r"C:\Users\me\notes\a.md"),
            (r"D:\work\shop\src", "/srv/work/shop/src"),
            ("E:/x/z", "/y/z"),
        ] {
            assert!(m.sources_of(to).contains(&from.to_owned()), "{to}");
        }
    }

    #[test]
    fn the_old_folders_a_text_names_are_found_as_whole_names() {
        let mut m = PathMap::default();
        m.add("/home/dev=/Users/dev").unwrap();
        m.add("/srv/work=/w").unwrap();
        assert_eq!(
            m.old_folders_in("{\"/home/dev/shop\": \"TRUST_FOLDER\"}"),
            ["/home/dev"]
        );
        assert_eq!(m.old_folders_in("cwd = \"/srv/work\"\n"), ["/srv/work"]);
        assert!(m.old_folders_in("/home/devx and /srv/workshop").is_empty());
        assert!(
            m.old_folders_in("https://host/home/dev/x /mnt/home/dev")
                .is_empty()
        );
        assert!(m.old_folders_in("").is_empty());
    }

    #[test]
    fn only_whole_paths_are_rewritten_longest_prefix_first() {
        let m = map();
        assert_eq!(m.map_path("/home/dev").as_deref(), Some("/Users/dev"));
        assert_eq!(
            m.map_path("/home/dev/shop/a.rs").as_deref(),
            Some("/work/shop/a.rs")
        );
        assert_eq!(m.map_path("/home/dev/x").as_deref(), Some("/Users/dev/x"));
        assert_eq!(m.map_path("/home/developer"), None);
        assert_eq!(m.map_path("see /home/dev/x"), None);
        // A list of paths, one a line: each line that is a path, and only those.
        assert_eq!(
            m.map_path("/home/dev/shop/a.rs\r\n/home/dev/b.rs\nsee /home/dev/c.rs\n")
                .as_deref(),
            Some("/work/shop/a.rs\r\n/Users/dev/b.rs\nsee /home/dev/c.rs\n")
        );
        assert_eq!(m.map_path("one\n/home/developer\n"), None);
        assert_eq!(
            m.map_path("file:///home/dev/shop/a.rs").as_deref(),
            Some("file:///work/shop/a.rs")
        );
    }

    #[test]
    fn a_rule_no_working_directory_is_under_is_unused() {
        let mut m = map();
        m.add("/home/de=/Users/me").unwrap();
        let dirs = ["/home/dev/shop", "/home/dev/api"];
        // `/home/dev` is used though `/home/dev/shop` wins for the shop.
        assert_eq!(m.unused(dirs), ["/home/de=/Users/me"]);
    }

    #[test]
    fn json_strings_are_rewritten_anywhere_in_a_value() {
        let mut v = json!({"locations": [{"path": "/home/dev/shop/a.rs", "line": 3}], "text": "in /home/dev"});
        assert!(map().map_json(&mut v));
        assert_eq!(v["locations"][0]["path"], "/work/shop/a.rs");
        assert_eq!(v["text"], "in /home/dev");
    }

    #[test]
    fn rules_must_have_both_sides_absolute() {
        let mut m = PathMap::default();
        assert!(m.add("/a").is_err());
        assert!(m.add("=/b").is_err());
        assert!(m.add("/a=").is_err());
        assert!(m.add("/home/dev=relative/path").is_err());
        assert!(m.add("home/dev=/b").is_err());
        assert!(m.add("C:=/b").is_err());
        for ok in [
            "/home/dev=/Users/dev",
            "C:\\Users\\dev=/home/dev",
            "/home/dev=D:/work",
            "\\\\server\\share=/mnt/share",
        ] {
            assert!(m.add(ok).is_ok(), "{ok}");
        }
    }
}
