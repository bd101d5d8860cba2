//! Prompt preparation, the one place it happens: the project root (the server's working directory),
//! the changeMode wrapping, and the `@` references, which are inlined for agy (after the jail check)
//! and only checked against the jail for the gemini backend, which reads the files itself.

use std::path::PathBuf;

use crate::backend::Backend;
use crate::exec::Runner;
use crate::{changemode, files};

/// A prompt ready for its backend, and the project root it was prepared against.
pub struct Prepared {
    pub prompt: String,
    pub root: PathBuf,
}

/// Prepares `prompt` for `backend`. `Err` is a refusal (a reference outside the project) or an
/// I/O failure, as the client sees it.
pub fn prepare(
    prompt: String,
    change_mode: bool,
    backend: Backend,
    runner: &Runner<'_>,
) -> Result<Prepared, String> {
    let root =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let wrapped = match change_mode {
        true => changemode::prompt::prepare_change_mode_prompt(&prompt),
        false => prompt,
    };
    let prompt = match backend {
        Backend::Agy => {
            match files::inline_file_references(&wrapped, &root, runner.abort_flag())? {
                std::borrow::Cow::Borrowed(_) => wrapped,
                std::borrow::Cow::Owned(inlined) => inlined,
            }
        }
        Backend::Gemini => {
            files::check_gemini_references(&wrapped, &root)?;
            wrapped
        }
    };
    Ok(Prepared { prompt, root })
}
