//! The kit every converter builds on: the same answer to the same question in every harness.
//!
//! | module | what it is for |
//! |---|---|
//! | [`accepted`] | which models and modes a harness accepts: one rule for every pair |
//! | [`placement`] | what writing one item came to (new, already there, kept beside, refused) and the tally of a kind into the import answer |
//! | [`beside`] | the one name of a copy kept beside a different version (`<thread>~<harness>`, and its title) |
//! | [`meta`] | typed `_meta.asp` accessors that merge into what is there |
//! | [`source`] | a surveyed file: its stat record, and reading it up to what the survey saw |
//! | [`fsops`] | atomic, never-clobbering writes with a dry-run mode, SQLite transactions included |
//! | [`resume`] | the command that resumes a written session, in its directory |
//! | [`report`] | diagnostics: what was found wrong or odd, by file and line |
//! | [`acp`], [`conversation`] | ACP `session/update` values: building them, folding a stream into messages and tool calls |
//! | [`skills`] | Agent Skills folders, read byte for byte and written whole |
//! | [`skill_block`] | a skill invoked by a command, as a prompt holds it (Pi's `<skill …>` block), and the command typed |
//! | [`memory_section`] | the `## <Harness> Added Memories` section of Gemini's and Qwen's instructions files |
//! | [`secrets`] | `--redact-secrets` |
//! | [`json_scan`] | JSON text scanned without parsing it: a string's plain run, whether a line parses into a `Value` |
//! | [`jsonc`] | JSON with comments (and trailing commas), read as the harnesses that allow it read it |
//! | [`settings_json`], [`mcp_json`] | JSONC config files (Gemini's and Qwen's `settings.json`, OpenCode's `opencode.json`): read, merged write, and their MCP server entries ↔ ACP `McpServer` |
//! | [`mcp_switch`] | MCP servers a harness keeps configured but switched off, kept off wherever they are carried |
//! | [`instructions_file`] | instructions kept in one Markdown file, written only where there is none |
//! | [`pathmap`] | `--map-path OLD=NEW` |
//! | [`config`], [`appended_log`], `credentialed_json`, [`server_files`] | a harness's own configuration kept whole by a backup and restored into that harness; a log it appends to (a prompt history, Codex's thread names) merged into one already there; a JSON file with credentials in it kept without them; the scripts its MCP servers run from its folders |
//! | [`archive`] | whether a session was archived (out of the harness's list, not deleted), from every reader's record of it |
//! | [`title`] | who gave a session its title (chosen, generated, or only its first prompt), from every reader's record of it |
//! | [`escape`], [`time`], [`uuid`], [`text`] | file-name escaping, RFC 3339 times, name-based UUIDs, text on one line |
//!
//! Converters never import each other; what two of them need goes here.

pub mod accepted;
pub mod acp;
pub mod appended_log;
pub mod archive;
pub mod beside;
pub mod config;
pub mod conversation;
pub mod credentialed_json;
pub mod env_refs;
pub mod escape;
pub mod fsops;
pub mod git_branch;
pub mod grants;
pub mod instructions_file;
pub mod json_scan;
pub mod jsonc;
#[cfg(any(feature = "gemini", feature = "qwen", feature = "opencode"))]
pub mod mcp_json;
pub mod mcp_switch;
#[cfg(any(feature = "gemini", feature = "qwen"))]
pub mod memory_section;
pub mod meta;
pub mod pathmap;
pub mod placement;
pub mod report;
pub mod resume;
pub mod secrets;
pub mod server_files;
pub mod settings_json;
pub mod skill_block;
pub mod skills;
pub mod source;
pub mod text;
pub mod time;
pub mod title;
pub mod tool_names;
pub mod uuid;
