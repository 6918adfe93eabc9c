//! Compiles in which npm release of dirq this crate installs: the record `npm-package.json`
//! (`{"name": "dirq", "version": "<version>", "integrity": "sha512-..."}`), which the
//! release build (`npm run release:build` at the repository root) copies here from the one
//! place the release records it. A build without the record (a checkout that was not built
//! for release) installs nothing by itself: it runs `DIRQ_BIN`, or an install already in the
//! cache folder.

use std::env;
use std::fs;
use std::path::Path;

const RECORD: &str = "npm-package.json";

fn main() {
    println!("cargo:rerun-if-changed={}", RECORD);
    let dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let path = Path::new(&dir).join(RECORD);
    let integrity = match fs::read_to_string(&path) {
        Ok(text) => checked_integrity(&text, &version, &path),
        Err(_) => {
            println!(
                "cargo:warning=no {} here: this build pins no npm release, so it installs none \
                 (set DIRQ_BIN, or build with `npm run release:build` at the repository root)",
                RECORD
            );
            String::new()
        }
    };
    println!("cargo:rustc-env=DIRQ_PINNED_NPM_INTEGRITY={}", integrity);
}

/// The record's integrity, after checking that it names this crate's version of `dirq`.
fn checked_integrity(text: &str, version: &str, path: &Path) -> String {
    let field = |key: &str| {
        string_field(text, key)
            .unwrap_or_else(|| panic!("{}: no string field \"{}\"", path.display(), key))
    };
    let name = field("name");
    let recorded = field("version");
    let integrity = field("integrity");
    if name != "dirq" {
        panic!(
            "{}: names the npm package {}, not dirq",
            path.display(),
            name
        );
    }
    if recorded != version {
        panic!(
            "{}: records dirq {}, but this crate is {}: the crate installs the npm release of its \
             own version; run the release build again",
            path.display(),
            recorded,
            version
        );
    }
    let digest = integrity.strip_prefix("sha512-").unwrap_or("");
    let base64 = digest
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=');
    if digest.len() != 88 || !base64 {
        panic!(
            "{}: integrity {:?} is not a sha512 integrity (sha512-<88 base64 characters>)",
            path.display(),
            integrity
        );
    }
    integrity
}

/// The value of `"key": "value"` in a flat JSON object whose strings need no escapes.
fn string_field(text: &str, key: &str) -> Option<String> {
    let quoted = format!("\"{}\"", key);
    let after_key = &text[text.find(&quoted)? + quoted.len()..];
    let after_colon = after_key.trim_start().strip_prefix(':')?.trim_start();
    let value = after_colon.strip_prefix('"')?;
    let end = value.find('"')?;
    Some(value[..end].to_string())
}
