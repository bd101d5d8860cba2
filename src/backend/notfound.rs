//! What a user reads when a CLI cannot be found: where the relay looked, how to install agy, and
//! the Gemini CLI's retirement, in the words of the system the relay runs on.

use crate::exec::{self, System};

/// What the not-found text says differently on each system.
struct Hints {
    /// How to check that the CLI is resolvable (the end of the third line).
    verify: String,
    /// How to install agy, as a verb phrase.
    install: &'static str,
    /// Where agy installs and how to point the relay at it.
    agy_location: &'static str,
}

/// The text for a program named `name` (`agy`, `gemini`, or the `node` an npm shim runs) that
/// could not be found, with this system's hints.
pub fn not_found_text(name: &str) -> String {
    text_on(exec::SYSTEM, name)
}

/// The not-found text as `system` words it.
fn text_on(system: System, name: &str) -> String {
    let hints = hints(system, name);
    let install = hints.install;
    let mut lines = vec![
        format!("Could not find the \"{name}\" executable."),
        "The MCP server runs in its own process and may not inherit your shell's PATH.".to_string(),
        format!("• Verify it is installed and resolvable: {}.", hints.verify),
    ];
    let more = "• More: https://goo.gle/gemini-cli-migration and docs/migration/antigravity-cli.md";
    match name {
        "agy" => lines.extend([
            format!("• Antigravity CLI (agy) is the Gemini CLI's successor and this tool's default backend since 2026-06-18. To install it, {install}, then run `agy` once to sign in."),
            format!("• {}", hints.agy_location),
            "• On a supported Gemini tier (paid API key or Enterprise/Standard license)? Set GEMINI_MCP_BACKEND=gemini to keep using the Gemini CLI instead.".to_string(),
            more.to_string(),
        ]),
        "gemini" => lines.extend([
            format!("• The Gemini CLI stopped serving free, Pro, and Ultra users on 2026-06-18. Migrate to the Antigravity CLI (agy), this tool's new default: {install}, then unset GEMINI_MCP_BACKEND."),
            "• Enterprise/Standard license or paid API key? Your Gemini access is unaffected: reinstall the Gemini CLI or set GEMINI_CLI_PATH to its full path.".to_string(),
            more.to_string(),
        ]),
        _ => (),
    }
    lines.join("\n")
}

fn hints(system: System, name: &str) -> Hints {
    match system {
        System::Posix => Hints {
            verify: format!("`which {name}`"),
            install: "run `curl -fsSL https://antigravity.google/cli/install.sh | bash`",
            agy_location: "It installs to ~/.local/bin; add that to PATH or set AGY_CLI_PATH to the agy binary.",
        },
        System::Windows => Hints {
            verify: format!("the relay looks for {}", windows_search(name)),
            install: "install it from https://goo.gle/gemini-cli-migration",
            agy_location: "It installs to %LOCALAPPDATA%\\agy\\bin\\agy.exe (older builds: %LOCALAPPDATA%\\Antigravity\\); add that directory to PATH or set AGY_CLI_PATH to the full path of agy.exe.",
        },
    }
}

/// Where the Windows search looks for `name`.
fn windows_search(name: &str) -> String {
    match name {
        "agy" => "AGY_CLI_PATH when set, else agy.exe in each PATH directory (never the current \
                  directory), then %LOCALAPPDATA%\\agy\\bin, %LOCALAPPDATA%\\Antigravity, \
                  %LOCALAPPDATA%\\Programs\\agy and %USERPROFILE%\\.local\\bin"
            .to_string(),
        "gemini" => "GEMINI_CLI_PATH when set, else gemini.exe or the npm shim gemini.cmd in each \
                     PATH directory (never the current directory)"
            .to_string(),
        _ => format!("{name}.exe in each PATH directory (never the current directory)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_starts_with_what_is_missing() {
        assert!(not_found_text("agy").starts_with(
            "Could not find the \"agy\" executable.\nThe MCP server runs in its own process"
        ));
    }

    fn check_windows_not_found(name: &str, third: &str, lines: usize) {
        let text = text_on(System::Windows, name);
        let all: Vec<&str> = text.lines().collect();
        assert_eq!(all.len(), lines, "{text}");
        assert_eq!(all[0], format!("Could not find the \"{name}\" executable."));
        assert_eq!(all[2], third);
        assert!(!text.contains("where ") && !text.contains("which "), "{text}");
    }

    #[test]
    fn windows_texts_say_where_the_relay_looked() {
        check_windows_not_found(
            "agy",
            r"• Verify it is installed and resolvable: the relay looks for AGY_CLI_PATH when set, else agy.exe in each PATH directory (never the current directory), then %LOCALAPPDATA%\agy\bin, %LOCALAPPDATA%\Antigravity, %LOCALAPPDATA%\Programs\agy and %USERPROFILE%\.local\bin.",
            7,
        );
        check_windows_not_found(
            "gemini",
            "• Verify it is installed and resolvable: the relay looks for GEMINI_CLI_PATH when set, else gemini.exe or the npm shim gemini.cmd in each PATH directory (never the current directory).",
            6,
        );
        check_windows_not_found(
            "node",
            "• Verify it is installed and resolvable: the relay looks for node.exe in each PATH directory (never the current directory).",
            3,
        );
    }

    #[test]
    fn windows_texts_keep_the_windows_install_lines() {
        let agy = text_on(System::Windows, "agy");
        assert!(agy.contains("To install it, install it from https://goo.gle/gemini-cli-migration, then run `agy` once to sign in."));
        assert!(agy.contains(r"• It installs to %LOCALAPPDATA%\agy\bin\agy.exe (older builds: %LOCALAPPDATA%\Antigravity\); add that directory to PATH or set AGY_CLI_PATH to the full path of agy.exe."));
        let gemini = text_on(System::Windows, "gemini");
        assert!(gemini.contains("this tool's new default: install it from https://goo.gle/gemini-cli-migration, then unset GEMINI_MCP_BACKEND."));
        assert!(!agy.contains("curl") && !gemini.contains("curl"));
    }

    #[test]
    fn posix_texts_name_which_and_the_installer() {
        let agy = text_on(System::Posix, "agy");
        assert!(agy.contains("• Verify it is installed and resolvable: `which agy`."), "{agy}");
        assert!(agy.contains("run `curl -fsSL https://antigravity.google/cli/install.sh | bash`"));
    }
}
