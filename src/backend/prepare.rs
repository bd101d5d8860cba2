//! Prompt preparation, the one place it happens: the project root (the server's working directory),
//! the changeMode wrapping, the `@` references, which are inlined for agy (after the jail check)
//! and only checked against the jail for the gemini backend, which reads the files itself, and the
//! call's attachments, checked before anything runs and named in the prompt as each backend reads
//! them.

use std::borrow::Cow;
use std::path::PathBuf;

use crate::backend::Backend;
use crate::backend::options::RunOptions;
use crate::exec::Runner;
use crate::files::attach::{self, Attachment};
use crate::{changemode, files};

/// A prompt ready for its backend, the project root it was prepared against and the files it
/// attaches.
pub struct Prepared {
    pub prompt: String,
    pub root: PathBuf,
    pub attached: Vec<Attachment>,
}

/// What a call asks of preparation besides its prompt.
pub struct Asked<'a> {
    pub tool: &'a str,
    pub change_mode: bool,
    pub options: &'a RunOptions,
    /// `GEMINI_MCP_MAX_ATTACHMENT_BYTES`.
    pub limit: u64,
}

/// Prepares `prompt` for `backend`. `Err` is a refusal (a reference outside the project, an
/// attachment refused) or an I/O failure, as the client sees it.
pub fn prepare(
    prompt: String,
    asked: &Asked<'_>,
    backend: Backend,
    runner: &Runner<'_>,
) -> Result<Prepared, String> {
    let root =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let wrapped = match asked.change_mode {
        true => changemode::prompt::prepare_change_mode_prompt(&prompt),
        false => prompt,
    };
    let mut entries = asked.options.attachments.clone();
    let mut prompt = match backend {
        Backend::Agy => match files::inline_and_find_media(&wrapped, &root, runner.abort_flag())? {
            (Cow::Borrowed(_), media) => {
                entries.extend(media);
                wrapped
            }
            (Cow::Owned(inlined), media) => {
                entries.extend(media);
                inlined
            }
        },
        Backend::Gemini => wrapped,
    };
    let options = asked.options;
    let attached = attach::check(asked.tool, &entries, &options.add_dirs, &root, asked.limit)?;
    if !attached.is_empty() {
        // The count and the total size only: never a path, never a byte of a file.
        log::info!("{}", &attach::notice(&attached)["📎 ".len()..]);
    }
    match backend {
        Backend::Agy if !attached.is_empty() => prompt.push_str(&attach::agy_block(&attached)),
        Backend::Agy => (),
        Backend::Gemini => {
            prompt.push_str(&attach::gemini_tokens(&attached));
            files::check_gemini_references(&prompt, &root)?;
        }
    }
    Ok(Prepared { prompt, root, attached })
}
