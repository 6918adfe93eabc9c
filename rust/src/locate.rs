//! Settings from the environment, programs on `PATH`, and the cache folder.

use std::env;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};

/// A variable's value without surrounding whitespace; `None` when unset or blank.
pub(crate) fn setting(name: &str) -> Option<OsString> {
    let value = env::var_os(name)?;
    let trimmed = match value.to_str() {
        Some(text) => OsString::from(text.trim()),
        None => value,
    };
    if trimmed.is_empty() {
        None
    } else {
        Some(trimmed)
    }
}

#[cfg(unix)]
fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path)
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn is_executable_file(path: &Path) -> bool {
    path.is_file()
}

/// The names a program can have on disk: `npm`, and on Windows `npm.exe`, `npm.cmd`.
fn program_file_names(name: &str) -> Vec<OsString> {
    if cfg!(windows) {
        [".exe", ".cmd", ".bat", ""]
            .iter()
            .map(|suffix| OsString::from(format!("{}{}", name, suffix)))
            .collect()
    } else {
        vec![OsString::from(name)]
    }
}

/// The program `name` in `folder`, if it is there and can be run.
pub(crate) fn program_in(folder: &Path, name: &str) -> Option<PathBuf> {
    program_file_names(name)
        .into_iter()
        .map(|file| folder.join(file))
        .find(|candidate| is_executable_file(candidate))
}

/// The first program `name` on `PATH`, as a shell would find it.
pub(crate) fn program_on_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .filter(|folder| !folder.as_os_str().is_empty())
        .find_map(|folder| program_in(&folder, name))
}

/// Whether a CLI file is JavaScript run by Node.js: by its suffix, or a `#!` line naming node.
pub(crate) fn runs_on_node(path: &Path) -> bool {
    let suffix = path.extension().and_then(OsStr::to_str).unwrap_or("");
    if ["js", "mjs", "cjs"].contains(&suffix) {
        return true;
    }
    let mut head = [0u8; 256];
    let read = fs::File::open(path)
        .and_then(|mut file| file.read(&mut head))
        .unwrap_or(0);
    let first_line = head[..read]
        .split(|byte| *byte == b'\n')
        .next()
        .unwrap_or(&[]);
    first_line.starts_with(b"#!") && first_line.windows(4).any(|window| window == b"node")
}

/// Where the launcher keeps what it installs, as the Python launcher does: `DIRQ_CACHE_DIR`,
/// else `%LOCALAPPDATA%\dirq` on Windows, else `$XDG_CACHE_HOME/dirq`, else `~/.cache/dirq`.
pub fn cache_dir() -> Result<PathBuf, Error> {
    if let Some(configured) = setting("DIRQ_CACHE_DIR") {
        return Ok(PathBuf::from(configured));
    }
    if cfg!(windows) {
        if let Some(local) = setting("LOCALAPPDATA") {
            return Ok(PathBuf::from(local).join("dirq"));
        }
    }
    if let Some(xdg) = setting("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(xdg).join("dirq"));
    }
    let home = setting("HOME").or_else(|| setting("USERPROFILE"));
    match home {
        Some(home) => Ok(PathBuf::from(home).join(".cache").join("dirq")),
        None => Err(Error::new(
            ErrorKind::CacheFolder,
            "no cache folder for the dirq CLI (neither XDG_CACHE_HOME nor HOME is set): set \
             DIRQ_CACHE_DIR to a folder dirq may write",
        )),
    }
}

/// The value of `"key": "value"` in JSON text, for flat records whose strings need no escapes.
pub(crate) fn json_string_field(text: &str, key: &str) -> Option<String> {
    let quoted = format!("\"{}\"", key);
    let after_key = &text[text.find(&quoted)? + quoted.len()..];
    let after_colon = after_key.trim_start().strip_prefix(':')?.trim_start();
    let value = after_colon.strip_prefix('"')?;
    let end = value.find('"')?;
    Some(value[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_flat_json_fields() {
        let text = "{\n  \"name\": \"dirq\",\n  \"version\" : \"0.1.0\"\n}";
        assert_eq!(json_string_field(text, "name").as_deref(), Some("dirq"));
        assert_eq!(json_string_field(text, "version").as_deref(), Some("0.1.0"));
        assert_eq!(json_string_field(text, "integrity"), None);
    }

    #[test]
    fn knows_javascript_by_suffix_and_shebang() {
        let folder = env::temp_dir().join(format!("dirq-locate-{}", std::process::id()));
        fs::create_dir_all(&folder).unwrap();
        let script = folder.join("cli");
        fs::write(&script, "#!/usr/bin/env node\nconsole.log(1)\n").unwrap();
        let binary = folder.join("native");
        fs::write(&binary, "\x7fELF...").unwrap();
        assert!(runs_on_node(&script));
        assert!(!runs_on_node(&binary));
        assert!(runs_on_node(Path::new("/nowhere/dirq.cjs")));
        fs::remove_dir_all(&folder).unwrap();
    }
}
