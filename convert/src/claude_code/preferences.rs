//! The user's preferences in `.claude.json` (what `/config` and `claude config set -g` set:
//! theme, editor mode, notifications, auto-compact, ...), kept by a backup as a part of
//! `.claude.json` and merged back into the same harness.
//!
//! `.claude.json` cannot be kept whole: it holds the account (`oauthAccount`, `userID`,
//! `primaryApiKey`, `customApiKeyResponses`), caches and counters. The part is an allowlist
//! ([`KEYS`]), so a key Claude Code adds later is not kept until it is known to be a
//! preference, rather than a credential kept until it is known to be one.

use serde_json::{Map, Value};

use super::jsonfile;
use super::layout::Layout;
use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::placement::Placement;

/// The part's name in a backup's configuration.
pub const PART: &str = ".claude.json#preferences";

/// The keys kept: Claude Code's global configuration keys (`GLOBAL_CONFIG_KEYS` in its
/// `cli.js`, 2.1.83) that hold a choice the person made. Left out of that list: `env` (it can
/// hold API keys; `settings.json`'s `env` is kept with that file), `apiKeyHelper` (how a key is
/// fetched on this machine), what the installation records about this machine
/// (`installMethod`, `autoUpdatesProtectedForNative`, `shiftEnterKeyBindingInstalled`) and
/// what the application records about its own use (`tipsHistory`, `hasUsedBackslashReturn`,
/// `remoteDialogSeen`, `hasCompletedClaudeInChromeOnboarding`, `lspRecommendationIgnoredCount`).
pub const KEYS: &[&str] = &[
    "agentPushNotifEnabled",
    "autoCompactEnabled",
    "autoConnectIde",
    "autoInstallIdeExtension",
    "autoUpdates",
    "claudeInChromeDefaultEnabled",
    "copyFullResponse",
    "copyOnSelect",
    "diffTool",
    "editorMode",
    "fileCheckpointingEnabled",
    "inputNeededNotifEnabled",
    "lspRecommendationDisabled",
    "lspRecommendationNeverPlugins",
    "messageIdleNotifThresholdMs",
    "permissionExplainerEnabled",
    "prStatusFooterEnabled",
    "preferredNotifChannel",
    "remoteControlAtStartup",
    "respectGitignore",
    "showExpandedTodos",
    "showTurnDuration",
    "taskCompleteNotifEnabled",
    "terminalProgressBarEnabled",
    "theme",
    "todoFeatureEnabled",
    "verbose",
];

/// The part, pretty JSON (the kept keys in the file's order); `None` when the file sets none
/// of them (or cannot be read: the `tools` read reports that).
pub fn extract(layout: &Layout) -> Option<Vec<u8>> {
    let file = jsonfile::read(&layout.global).ok()?;
    let kept: Map<String, Value> = file
        .object
        .iter()
        .filter(|(k, _)| KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if kept.is_empty() {
        return None;
    }
    let mut bytes = serde_json::to_vec_pretty(&Value::Object(kept)).expect("JSON serialises");
    bytes.push(b'\n');
    Some(bytes)
}

/// Sets every preference of the part that `.claude.json` does not set; one set to the same
/// value is already there, one set differently is the user's on this machine and is kept. A
/// key outside [`KEYS`] (a tampered part) is refused. Every other key stays as it is; the
/// file is written once, atomically, when something was set (a missing file is created).
pub fn merge(
    layout: &Layout,
    bytes: &[u8],
    writer: &Writer,
) -> Result<Vec<(String, Placement)>, ConvertError> {
    let part: Value = serde_json::from_slice(bytes)
        .map_err(|e| ConvertError::invalid(PART, format!("not valid JSON: {e}")))?;
    let Some(wanted) = part.as_object() else {
        return Err(ConvertError::invalid(PART, "is not a JSON object"));
    };
    let global = layout.global.display().to_string();
    let mut file = match jsonfile::read(&layout.global) {
        Ok(f) => f,
        Err(e) => {
            return Ok(vec![(
                PART.to_owned(),
                Placement::Refused(format!("{}; preferences not restored", e.0)),
            )]);
        }
    };
    let mut out = Vec::new();
    for (key, value) in wanted {
        let label = format!("Claude Code preference {key}");
        let placed = if !KEYS.contains(&key.as_str()) {
            Placement::Refused("not a preference a backup keeps".to_owned())
        } else {
            jsonfile::place(&mut file.object, key, value.clone(), || {
                format!("set differently in {global}; kept yours")
            })
        };
        out.push((label, placed));
    }
    jsonfile::write_placed(writer, &layout.global, &file, &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_preferences_are_extracted_and_merging_keeps_what_is_set() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::with_config_dir(dir.path(), None);
        std::fs::write(
            &layout.global,
            r#"{"userID": "u", "oauthAccount": {"emailAddress": "a@b"}, "primaryApiKey": "sk-ant-x",
                "env": {"ANTHROPIC_API_KEY": "sk-ant-y"}, "installMethod": "native",
                "theme": "light-daltonized", "editorMode": "vim", "verbose": true,
                "tipsHistory": {"x": 3}, "customApiKeyResponses": {"approved": ["abc"]}}"#,
        )
        .unwrap();
        let part = extract(&layout).unwrap();
        let v: Value = serde_json::from_slice(&part).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"theme": "light-daltonized", "editorMode": "vim", "verbose": true})
        );

        // Into a machine that chose its own theme: that stays; the rest is set; the account
        // and every other key of the file stay as they are.
        let other = tempfile::tempdir().unwrap();
        let to = Layout::with_config_dir(other.path(), None);
        std::fs::write(&to.global, r#"{"userID": "v", "theme": "dark"}"#).unwrap();
        let placed = merge(&to, &part, &Writer::new(false)).unwrap();
        let by_key = |k: &str| {
            placed
                .iter()
                .find(|(l, _)| l.ends_with(k))
                .map(|(_, p)| p.clone())
                .unwrap()
        };
        assert!(matches!(by_key("theme"), Placement::Refused(_)));
        assert_eq!(by_key("editorMode"), Placement::New);
        let after: Value = serde_json::from_slice(&std::fs::read(&to.global).unwrap()).unwrap();
        assert_eq!(
            after,
            serde_json::json!({"userID": "v", "theme": "dark", "editorMode": "vim", "verbose": true})
        );
        let again = merge(&to, &part, &Writer::new(false)).unwrap();
        assert!(
            again
                .iter()
                .all(|(l, p)| l.ends_with("theme") || *p == Placement::AlreadyThere)
        );

        // A tampered part cannot set the account.
        let bytes = br#"{"oauthAccount": {"emailAddress": "evil@x"}}"#;
        let refused = merge(&to, bytes, &Writer::new(false)).unwrap();
        assert!(matches!(refused[0].1, Placement::Refused(_)));
        let after: Value = serde_json::from_slice(&std::fs::read(&to.global).unwrap()).unwrap();
        assert!(after.get("oauthAccount").is_none());

        // Nothing kept: no part.
        std::fs::write(&layout.global, r#"{"userID": "u"}"#).unwrap();
        assert!(extract(&layout).is_none());
    }
}
