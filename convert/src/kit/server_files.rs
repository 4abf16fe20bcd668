//! The files an MCP server runs from by its path: a script the user keeps in the harness's own
//! folder (`~/.copilot/mcp/issues.py`, `~/.config/opencode/mcp/issues.py`) is part of that
//! harness's configuration as much as the file that names it, and a backup that kept the
//! server without its script gave back a server that fails to start on the new machine, with
//! nothing said (found by a new user's trial).
//!
//! A server names its files in its command and its arguments (`--config=PATH` too), by an
//! absolute path or one under the home (`~/`, `$HOME/`, `${HOME}/`, which a harness's shell or
//! its own expansion turns into one). Only paths that lead to a file under the home count: a
//! server's interpreter (`/usr/bin/python3`) or the folder it works in is not the person's to
//! back up. [`ServerFiles::kept`] are those inside the harness's folders, kept with its
//! configuration (screened as every configuration file is: no credentials, links only to
//! regular files); [`ServerFiles::elsewhere`] are the others under the home, which a backup of
//! the harness does not keep and says so.

use std::path::{Component, Path, PathBuf};

use asp_format::state::McpServer;

/// The files `servers` name, sorted and each once.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ServerFiles {
    /// Files inside one of the harness's folders.
    pub kept: Vec<PathBuf>,
    /// Files elsewhere under the home, each with the first server (by name) that names it.
    pub elsewhere: Vec<(PathBuf, String)>,
}

/// The files the stdio servers among `servers` name that are regular files (or links to
/// them) under `home`, split by whether they are inside one of `folders`.
/// The paths found are spelled under `home` as it is given (a relative home gives relative
/// paths), as the harness's other configuration files are.
pub fn server_files(home: &Path, folders: &[PathBuf], servers: &[McpServer]) -> ServerFiles {
    let absolute = |p: &Path| resolved(&std::path::absolute(p).unwrap_or_else(|_| p.to_owned()));
    let home_abs = absolute(home);
    let folders: Vec<PathBuf> = folders.iter().map(|f| absolute(f)).collect();
    let mut out = ServerFiles::default();
    for server in servers {
        let McpServer::Stdio(s) = server else {
            continue;
        };
        let words = std::iter::once(s.command.as_str()).chain(s.args.iter().map(String::as_str));
        for word in words {
            let Some(named) = named_path(&home_abs, word) else {
                continue;
            };
            let Ok(rel) = named.strip_prefix(&home_abs) else {
                continue;
            };
            let path = home.join(rel);
            if rel.as_os_str().is_empty() || !path.is_file() {
                continue;
            }
            if folders.iter().any(|f| named.starts_with(f)) {
                out.kept.push(path);
            } else if !out.elsewhere.iter().any(|(p, _)| *p == path) {
                out.elsewhere.push((path, s.name.clone()));
            }
        }
    }
    out.kept.sort();
    out.kept.dedup();
    out.elsewhere.sort();
    out
}

/// Whether a stdio server of `servers` names a file whose path ends with `rel` (a path relative
/// to some home): how a pulled snapshot record's configuration file that the harness's own
/// rule does not name is told to be one [`server_files`] kept, whatever home it was kept in.
pub fn named_by(servers: &[McpServer], rel: &str) -> bool {
    let rel = Path::new(rel);
    servers.iter().any(|server| match server {
        McpServer::Stdio(s) => std::iter::once(s.command.as_str())
            .chain(s.args.iter().map(String::as_str))
            .any(|word| resolved(Path::new(value_of(word))).ends_with(rel)),
        _ => false,
    })
}

/// The path part of a word: the value of `--flag=value`, else the word.
fn value_of(word: &str) -> &str {
    match word.split_once('=') {
        Some((flag, value)) if flag.starts_with('-') => value,
        _ => word,
    }
}

/// The path `word` (a command or an argument) names, `..` resolved without following links;
/// `None` when it names none (a relative path is relative to a folder the harness starts the
/// server in, which the configuration does not say).
fn named_path(home: &Path, word: &str) -> Option<PathBuf> {
    let word = value_of(word);
    let path = ["~/", "$HOME/", "${HOME}/"]
        .iter()
        .find_map(|prefix| word.strip_prefix(prefix))
        .map(|rest| home.join(rest))
        .or_else(|| Path::new(word).is_absolute().then(|| PathBuf::from(word)))?;
    Some(resolved(&path))
}

/// `path` with `.` and `..` resolved as text, links not followed.
fn resolved(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::state::McpStdio;
    use std::fs;

    fn stdio(name: &str, command: &str, args: &[&str]) -> McpServer {
        McpServer::Stdio(McpStdio {
            name: name.to_owned(),
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Vec::new(),
            meta: None,
        })
    }

    #[test]
    fn a_script_in_the_harness_folder_is_kept_and_one_elsewhere_in_the_home_is_said() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let folder = home.join(".copilot");
        fs::create_dir_all(folder.join("mcp")).unwrap();
        fs::create_dir_all(home.join("bin")).unwrap();
        fs::write(folder.join("mcp/issues.py"), "print()\n").unwrap();
        fs::write(folder.join("mcp/issues.toml"), "x = 1\n").unwrap();
        fs::write(folder.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::write(home.join("bin/db.sqlite"), "").unwrap();
        let h = home.to_str().unwrap();
        let servers = [
            stdio(
                "issues",
                "python3",
                &[
                    &format!("{h}/.copilot/mcp/../mcp/issues.py"),
                    &format!("--config={h}/.copilot/mcp/issues.toml"),
                    &format!("{h}/bin/db.sqlite"),
                    // Not files: a folder, one that is not there, a relative path, a flag.
                    &format!("{h}/.copilot/mcp"),
                    &format!("{h}/.copilot/mcp/gone.py"),
                    "mcp/issues.py",
                    "--verbose",
                ],
            ),
            stdio("runner", "~/.copilot/run.sh", &["${HOME}/bin/db.sqlite"]),
            // The interpreter is outside the home.
            stdio("system", "/bin/sh", &["$HOME/.copilot/run.sh"]),
        ];
        for rel in [
            ".copilot/mcp/issues.py",
            "mcp/issues.toml",
            ".copilot/run.sh",
        ] {
            assert!(named_by(&servers, rel), "{rel}");
        }
        for rel in [".copilot/mcp/other.py", "copilot/run.sh", "bin"] {
            assert!(!named_by(&servers, rel), "{rel}");
        }
        let found = server_files(&home, std::slice::from_ref(&folder), &servers);
        assert_eq!(
            found,
            ServerFiles {
                kept: vec![
                    folder.join("mcp/issues.py"),
                    folder.join("mcp/issues.toml"),
                    folder.join("run.sh"),
                ],
                elsewhere: vec![(home.join("bin/db.sqlite"), "issues".to_owned())],
            }
        );
    }
}
