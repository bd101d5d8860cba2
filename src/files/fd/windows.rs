//! The Windows side of `files::fd`: a directory is an open handle, and every name is opened
//! relative to its parent's handle with `NtCreateFile` (`RootDirectory` and
//! `FILE_OPEN_REPARSE_POINT`, so no reparse point is ever followed). Each opened component must pass
//! the reparse layer (`rules::opened`) and its final path (`GetFinalPathNameByHandleW`) must lie
//! under the final path of the directory the walk started from (`rules::final_path_within`);
//! content is read only through that same handle. Listings come from
//! `GetFileInformationByHandleEx(FileIdBothDirectoryInfo)`, renames from
//! `NtSetInformationFile(FileRenameInformation)` relative to the directory's handle.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::mem::{offset_of, size_of};
use std::os::windows::ffi::OsStringExt;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::Path;
use std::sync::Arc;

use windows_sys::Wdk::Foundation::OBJECT_ATTRIBUTES;
use windows_sys::Wdk::Storage::FileSystem::{
    FILE_CREATE, FILE_DELETE_ON_CLOSE, FILE_DIRECTORY_FILE, FILE_NON_DIRECTORY_FILE, FILE_OPEN,
    FILE_OPEN_REPARSE_POINT, FILE_RENAME_INFORMATION, FILE_SYNCHRONOUS_IO_NONALERT,
    FileRenameInformation, NtCreateFile, NtSetInformationFile,
};
use windows_sys::Win32::Foundation::{
    ERROR_NO_MORE_FILES, HANDLE, OBJ_CASE_INSENSITIVE, RtlNtStatusToDosError, UNICODE_STRING,
};
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, DELETE, FILE_ATTRIBUTE_NORMAL, FILE_ATTRIBUTE_TAG_INFO,
    FILE_FLAG_BACKUP_SEMANTICS, FILE_GENERIC_READ, FILE_GENERIC_WRITE, FILE_ID_BOTH_DIR_INFO,
    FILE_LIST_DIRECTORY, FILE_NAME_NORMALIZED, FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE,
    FILE_SHARE_READ, FILE_SHARE_WRITE, FILE_TRAVERSE, FILE_TYPE_DISK, FileAttributeTagInfo,
    FileIdBothDirectoryInfo, FileIdBothDirectoryRestartInfo, GetFileInformationByHandle,
    GetFileInformationByHandleEx, GetFileType, GetFinalPathNameByHandleW, SYNCHRONIZE,
    VOLUME_NAME_DOS,
};
use windows_sys::Win32::System::IO::IO_STATUS_BLOCK;

use super::{EntryKind, Open};
use crate::files::path::windows::{self as rules, Opened};

/// An open directory or file, with the final path of the directory the walk started from: every
/// handle opened beneath it must have a final path under that one.
#[derive(Debug)]
pub(super) struct Handle {
    handle: OwnedHandle,
    root: Arc<[u16]>,
}

impl Handle {
    pub(super) fn try_clone(&self) -> io::Result<Handle> {
        Ok(Handle { handle: self.handle.try_clone()?, root: Arc::clone(&self.root) })
    }

    fn raw(&self) -> HANDLE {
        self.handle.as_raw_handle()
    }
}

impl From<Handle> for File {
    fn from(handle: Handle) -> File {
        File::from(handle.handle)
    }
}

/// One path component in UTF-16, as `NtCreateFile` takes it.
pub(super) type Name = Vec<u16>;

/// A component already checked by the shared rules (no `/`, no NUL) in UTF-16. Backslashes would
/// make it several components and `:` would name an alternate data stream, so both are refused;
/// names that are not Unicode are refused too (the walk leaves them out of listings).
pub(super) fn name(bytes: &[u8]) -> io::Result<Name> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "not a Unicode name"))?;
    if text.contains(['\\', ':']) || text.chars().any(char::is_control) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a single path component"));
    }
    Ok(text.encode_utf16().collect())
}

/// The name or relative path whose bytes are `bytes`: only Unicode names are taken (listings
/// leave the others out), so `None` means the bytes name nothing the jail opens.
pub(super) fn os_str(bytes: &[u8]) -> Option<&OsStr> {
    std::str::from_utf8(bytes).ok().map(OsStr::new)
}

/// What a name that is never followed is called here: every reparse point counts.
pub(super) const LINK: &str = "a reparse point (a symbolic link, a junction or the like)";

/// The error for a path that names a directory where a file is needed.
pub(super) fn is_a_directory() -> io::Error {
    io::Error::new(io::ErrorKind::IsADirectory, "is a directory")
}

/// The error for a path that goes through something that is not a directory.
pub(super) fn not_a_directory() -> io::Error {
    io::Error::new(io::ErrorKind::NotADirectory, "not a directory")
}

/// Opens `path` for reading, following reparse points; opening a file on Windows never blocks the
/// way a FIFO does on POSIX, and `regular` then keeps only disk files.
pub(super) fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Opens the directory at `path`, following reparse points (the trusted starting point), and
/// records its final path as the root every later open must stay under.
pub(super) fn open_dir(path: &Path) -> io::Result<Handle> {
    let file = OpenOptions::new()
        .access_mode(FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES | SYNCHRONIZE)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    let handle = OwnedHandle::from(file);
    let root: Arc<[u16]> = final_path(handle.as_raw_handle())?.into();
    let opened = Handle { handle, root };
    match attribute_tag(&opened).map(|(attributes, _)| attributes)? {
        attributes if attributes & rules::FILE_ATTRIBUTE_DIRECTORY != 0 => Ok(opened),
        _ => Err(not_a_directory()),
    }
}

/// Opens the single component `name` relative to `dir`, never through a reparse point, and only
/// if its final path is under the root's.
pub(super) fn open_at(dir: &Handle, name: &[u16], how: Open) -> io::Result<Handle> {
    let (access, options) = match how {
        Open::Traverse => (
            FILE_LIST_DIRECTORY | FILE_TRAVERSE | FILE_READ_ATTRIBUTES | SYNCHRONIZE,
            FILE_DIRECTORY_FILE,
        ),
        Open::ReadFile => (FILE_GENERIC_READ, FILE_NON_DIRECTORY_FILE),
    };
    let opened = nt_create(dir, name, access, FILE_OPEN, options)?;
    let (attributes, tag) = attribute_tag(&opened)?;
    match (rules::opened(attributes, tag), how) {
        (Opened::NotFollowed, _) => return Err(not_followed()),
        (Opened::Directory, Open::Traverse) | (Opened::File, Open::ReadFile) => (),
        (Opened::File, Open::Traverse) => return Err(not_a_directory()),
        (Opened::Directory, Open::ReadFile) => return Err(is_a_directory()),
    }
    within_root(&opened)?;
    Ok(opened)
}

/// Windows has no single call that opens several components beneath a handle without following
/// reparse points: the caller walks them one by one.
pub(super) fn open_beneath(
    _dir: &Handle,
    _components: &[Name],
    _how: Open,
) -> Option<io::Result<Handle>> {
    None
}

/// What `name` is in `dir`, without following a reparse point (which counts as a symlink).
pub(super) fn kind_at(dir: &Handle, name: &[u16]) -> io::Result<EntryKind> {
    let opened = nt_create(dir, name, FILE_READ_ATTRIBUTES | SYNCHRONIZE, FILE_OPEN, 0)?;
    let (attributes, tag) = attribute_tag(&opened)?;
    Ok(kind_of(attributes, tag))
}

/// The volume serial number and file index of the open directory, which identify it.
pub(super) fn identity(dir: &Handle) -> io::Result<(u64, u64)> {
    let mut info = BY_HANDLE_FILE_INFORMATION::default();
    // SAFETY: `info` is a writable structure of the type the call fills in, and the handle is open.
    #[allow(unsafe_code)]
    let ok = unsafe { GetFileInformationByHandle(dir.raw(), &mut info) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
    Ok((u64::from(info.dwVolumeSerialNumber), index))
}

/// The names in `dir` (`.` and `..` included), each with its kind. Names that are not Unicode
/// (unpaired surrogates) are left out: the jail's paths are Unicode text.
pub(super) fn list(dir: &Handle) -> io::Result<Vec<(OsString, Option<EntryKind>)>> {
    // 64 KiB, in u64s so that every record in it is aligned.
    let mut buffer = vec![0u64; 8192];
    let mut names = Vec::new();
    // The first call restarts the enumeration, so each listing starts at the beginning.
    let mut class = FileIdBothDirectoryRestartInfo;
    loop {
        let bytes = u32::try_from(buffer.len() * size_of::<u64>()).unwrap_or(u32::MAX);
        // SAFETY: the buffer is writable for `bytes` bytes and aligned for the records the call
        // writes into it; the handle is an open directory.
        #[allow(unsafe_code)]
        let ok = unsafe {
            GetFileInformationByHandleEx(dir.raw(), class, buffer.as_mut_ptr().cast(), bytes)
        };
        if ok == 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(ERROR_NO_MORE_FILES as i32) {
                return Ok(names);
            }
            return Err(err);
        }
        class = FileIdBothDirectoryInfo;
        let base = buffer.as_ptr().cast::<u8>();
        let end = buffer.len() * size_of::<u64>();
        let mut offset = 0usize;
        loop {
            let name_at = offset + offset_of!(FILE_ID_BOTH_DIR_INFO, FileName);
            if name_at > end {
                break;
            }
            // SAFETY: a record starts at `offset` (0, or a NextEntryOffset the system wrote, which
            // keeps records 8-byte aligned) and its fixed part lies inside the buffer (checked
            // above); the record is copied out before the buffer is reused.
            #[allow(unsafe_code)]
            let record = unsafe { base.add(offset).cast::<FILE_ID_BOTH_DIR_INFO>().read() };
            let name_bytes = record.FileNameLength as usize;
            if name_at + name_bytes > end {
                break;
            }
            // SAFETY: the name's `FileNameLength` bytes lie inside the buffer (checked above); it
            // is read unaligned as bytes and then paired into UTF-16 units.
            #[allow(unsafe_code)]
            let raw = unsafe { std::slice::from_raw_parts(base.add(name_at), name_bytes) };
            let units: Vec<u16> =
                raw.chunks_exact(2).map(|pair| u16::from_ne_bytes([pair[0], pair[1]])).collect();
            if String::from_utf16(&units).is_ok() {
                let kind = kind_of(record.FileAttributes, reparse_tag_of(&record));
                names.push((OsString::from_wide(&units), Some(kind)));
            }
            if record.NextEntryOffset == 0 {
                break;
            }
            offset += record.NextEntryOffset as usize;
        }
    }
}

/// Creates the subdirectory `name` of `dir`.
pub(super) fn create_dir_at(dir: &Handle, name: &[u16]) -> io::Result<()> {
    let access = FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE;
    let created = nt_create(dir, name, access, FILE_CREATE, FILE_DIRECTORY_FILE)?;
    within_root(&created)
}

/// Creates the new file `name` in `dir` for writing; fails if anything, a reparse point
/// included, already has that name.
pub(super) fn create_new_at(dir: &Handle, name: &[u16]) -> io::Result<Handle> {
    let created = nt_create(dir, name, FILE_GENERIC_WRITE, FILE_CREATE, FILE_NON_DIRECTORY_FILE)?;
    within_root(&created)?;
    Ok(created)
}

/// Renames `from` to `to`, both in `dir`; `to` is replaced (a reparse point named `to` is
/// replaced, never followed).
pub(super) fn rename_at(dir: &Handle, from: &[u16], to: &[u16]) -> io::Result<()> {
    let source = nt_create(dir, from, DELETE | SYNCHRONIZE, FILE_OPEN, 0)?;
    within_root(&source)?;
    let name_at = offset_of!(FILE_RENAME_INFORMATION, FileName);
    let length = name_at + to.len() * 2;
    let too_long = || io::Error::new(io::ErrorKind::InvalidInput, "name too long");
    let name_length = u32::try_from(to.len() * 2).map_err(|_| too_long())?;
    let total =
        u32::try_from(length.max(size_of::<FILE_RENAME_INFORMATION>())).map_err(|_| too_long())?;
    // In u64s so that the structure at its start is aligned.
    let mut buffer = vec![0u64; (total as usize).div_ceil(size_of::<u64>())];
    let info = buffer.as_mut_ptr().cast::<FILE_RENAME_INFORMATION>();
    let mut status = IO_STATUS_BLOCK::default();
    // SAFETY: the buffer is aligned and at least `total` bytes long, which holds the structure
    // and the `to.len()` units of the name written after its fixed part; both handles are open,
    // and `status` is writable for the call.
    #[allow(unsafe_code)]
    let rc = unsafe {
        (*info).Anonymous.ReplaceIfExists = true;
        (*info).RootDirectory = dir.raw();
        (*info).FileNameLength = name_length;
        let name = buffer.as_mut_ptr().cast::<u8>().add(name_at).cast::<u16>();
        std::ptr::copy_nonoverlapping(to.as_ptr(), name, to.len());
        NtSetInformationFile(
            source.raw(),
            &mut status,
            buffer.as_ptr().cast(),
            total,
            FileRenameInformation,
        )
    };
    nt_check(rc)
}

/// Removes the file `name` from `dir` (opened without following a reparse point, deleted when the
/// handle closes).
pub(super) fn remove_file_at(dir: &Handle, name: &[u16]) -> io::Result<()> {
    let options = FILE_NON_DIRECTORY_FILE | FILE_DELETE_ON_CLOSE;
    let opened = nt_create(dir, name, DELETE | SYNCHRONIZE, FILE_OPEN, options)?;
    drop(opened);
    Ok(())
}

/// Keeps `file` only if it is a regular file on disk (not a directory, pipe or character device).
pub(super) fn regular(file: File) -> io::Result<File> {
    // SAFETY: GetFileType only reads the type of the open handle `file` owns.
    #[allow(unsafe_code)]
    let kind = unsafe { GetFileType(file.as_raw_handle()) };
    if kind != FILE_TYPE_DISK || !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// `NtCreateFile` of `name` relative to `dir`, never following a reparse point, with synchronous
/// I/O so that the handle works as a `File`.
fn nt_create(
    dir: &Handle,
    name: &[u16],
    access: u32,
    disposition: u32,
    options: u32,
) -> io::Result<Handle> {
    let bytes = u16::try_from(name.len() * 2)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name too long"))?;
    let object_name =
        UNICODE_STRING { Length: bytes, MaximumLength: bytes, Buffer: name.as_ptr().cast_mut() };
    let attributes = OBJECT_ATTRIBUTES {
        Length: size_of::<OBJECT_ATTRIBUTES>() as u32,
        RootDirectory: dir.raw(),
        ObjectName: &object_name,
        Attributes: OBJ_CASE_INSENSITIVE,
        SecurityDescriptor: std::ptr::null(),
        SecurityQualityOfService: std::ptr::null(),
    };
    let mut handle: HANDLE = std::ptr::null_mut();
    let mut status = IO_STATUS_BLOCK::default();
    // SAFETY: every pointer refers to a live local for the duration of the call (`name` outlives
    // `object_name`, which outlives `attributes`); `dir` is an open directory handle; no extended
    // attributes are passed.
    #[allow(unsafe_code)]
    let rc = unsafe {
        NtCreateFile(
            &mut handle,
            access | SYNCHRONIZE,
            &attributes,
            &mut status,
            std::ptr::null(),
            FILE_ATTRIBUTE_NORMAL,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            disposition,
            options | FILE_OPEN_REPARSE_POINT | FILE_SYNCHRONOUS_IO_NONALERT,
            std::ptr::null(),
            0,
        )
    };
    nt_check(rc)?;
    // SAFETY: NtCreateFile succeeded, so `handle` is a new open handle that nothing else owns.
    #[allow(unsafe_code)]
    let handle = unsafe { OwnedHandle::from_raw_handle(handle) };
    Ok(Handle { handle, root: Arc::clone(&dir.root) })
}

/// The attributes and reparse tag of an open handle.
fn attribute_tag(opened: &Handle) -> io::Result<(u32, u32)> {
    let mut info = FILE_ATTRIBUTE_TAG_INFO::default();
    // SAFETY: `info` is writable and exactly the size passed; the handle is open.
    #[allow(unsafe_code)]
    let ok = unsafe {
        GetFileInformationByHandleEx(
            opened.raw(),
            FileAttributeTagInfo,
            (&mut info as *mut FILE_ATTRIBUTE_TAG_INFO).cast(),
            size_of::<FILE_ATTRIBUTE_TAG_INFO>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((info.FileAttributes, info.ReparseTag))
}

/// The final-path layer: refuses a handle whose final path is not under the root's.
fn within_root(opened: &Handle) -> io::Result<()> {
    if rules::final_path_within(&final_path(opened.raw())?, &opened.root) {
        Ok(())
    } else {
        Err(io::Error::new(io::ErrorKind::PermissionDenied, "resolves outside the directory"))
    }
}

/// `GetFinalPathNameByHandleW` in its canonical `\\?\` form.
fn final_path(handle: HANDLE) -> io::Result<Vec<u16>> {
    let mut buffer = vec![0u16; 512];
    loop {
        let capacity = u32::try_from(buffer.len()).unwrap_or(u32::MAX);
        // SAFETY: the buffer is writable for `capacity` units and the handle is open.
        #[allow(unsafe_code)]
        let len = unsafe {
            GetFinalPathNameByHandleW(
                handle,
                buffer.as_mut_ptr(),
                capacity,
                FILE_NAME_NORMALIZED | VOLUME_NAME_DOS,
            )
        } as usize;
        if len == 0 {
            return Err(io::Error::last_os_error());
        }
        if len < buffer.len() {
            buffer.truncate(len);
            return Ok(buffer);
        }
        // Too small: `len` is the size needed, the terminating NUL included.
        buffer.resize(len, 0);
    }
}

/// The reparse tag of a listed entry: `EaSize` holds it when the entry is a reparse point.
fn reparse_tag_of(record: &FILE_ID_BOTH_DIR_INFO) -> u32 {
    match record.FileAttributes & rules::FILE_ATTRIBUTE_REPARSE_POINT {
        0 => 0,
        _ => record.EaSize,
    }
}

/// What an entry with these attributes is: a reparse point of any tag counts as a symlink (never
/// followed), a device as something never read.
fn kind_of(attributes: u32, tag: u32) -> EntryKind {
    match rules::opened(attributes, tag) {
        Opened::Directory => EntryKind::Dir,
        Opened::File => EntryKind::File,
        Opened::NotFollowed if attributes & rules::FILE_ATTRIBUTE_DEVICE != 0 => EntryKind::Other,
        Opened::NotFollowed => EntryKind::Symlink,
    }
}

fn not_followed() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "a reparse point is not followed")
}

/// Turns an `NTSTATUS` into the matching Win32 error.
fn nt_check(status: i32) -> io::Result<()> {
    if status >= 0 {
        return Ok(());
    }
    // SAFETY: RtlNtStatusToDosError only maps a status code to an error code.
    #[allow(unsafe_code)]
    let code = unsafe { RtlNtStatusToDosError(status) };
    Err(io::Error::from_raw_os_error(code as i32))
}

// The handle-relative walk, listing and writes against a Windows file system (Wine runs these; it
// cannot make reparse points, so layers 1 and 2 are tested by `files::path::windows`'s own tests).
#[cfg(test)]
mod tests {
    use super::*;

    use std::ffi::OsStr;
    use std::io::{Read, Write};

    use crate::files::fd::{Dir, EntryKind};
    use crate::testutil::TempDir;

    fn read(mut file: File) -> String {
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn files_and_directories_beneath() {
        let tmp = TempDir::new();
        tmp.file("a/b/c.txt", "deep");
        let root = Dir::open(tmp.path()).unwrap();
        assert_eq!(read(root.file_beneath(b"a/b/c.txt").unwrap()), "deep");
        assert_eq!(read(root.file_beneath(b"./a//b/./c.txt").unwrap()), "deep");
        let b = root.dir_beneath(b"a/b").unwrap();
        assert_eq!(read(b.open_file(OsStr::new("c.txt")).unwrap()), "deep");
        assert_eq!(read(root.file_beneath(b"A/B/C.TXT").unwrap()), "deep", "case-insensitive");
        assert!(root.file_beneath(b"../x").is_err());
        assert!(root.file_beneath(b"a/b").is_err());
        assert!(root.file_beneath(b"").is_err());
        assert!(root.dir_beneath(b"a/b/c.txt").is_err());
        assert!(root.file_beneath(b"a/missing.txt").is_err());
        for name in ["a\\b", "c.txt:stream", "c.txt::$DATA", "x\u{1}y"] {
            let err = b.open_file(OsStr::new(name)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
        }
    }

    #[test]
    fn kinds_entries_and_identity() {
        let tmp = TempDir::new();
        tmp.file("f.txt", "f");
        tmp.dir("d");
        let root = Dir::open(tmp.path()).unwrap();
        let mut entries: Vec<(String, EntryKind)> = root
            .entries()
            .unwrap()
            .into_iter()
            .map(|it| (it.name.to_string_lossy().into_owned(), it.kind))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            entries,
            [("d".to_string(), EntryKind::Dir), ("f.txt".to_string(), EntryKind::File)]
        );
        assert_eq!(root.entries().unwrap().len(), 2, "each listing starts at the beginning");
        assert_eq!(root.kind(OsStr::new("d")).unwrap(), EntryKind::Dir);
        assert_eq!(root.kind(OsStr::new("f.txt")).unwrap(), EntryKind::File);
        assert!(root.kind(OsStr::new("missing")).is_err());
        assert!(root.child_dir(OsStr::new("f.txt")).is_err());
        assert!(root.open_file(OsStr::new("d")).is_err());
        let d = root.child_dir(OsStr::new("d")).unwrap();
        assert_ne!(root.identity().unwrap(), d.identity().unwrap());
        assert_eq!(root.identity().unwrap(), Dir::open(tmp.path()).unwrap().identity().unwrap());
    }

    #[test]
    fn create_write_rename_and_remove() {
        let tmp = TempDir::new();
        tmp.file("logo.png", "OLD");
        let root = Dir::open(tmp.path()).unwrap();
        root.create_dir(OsStr::new("d")).unwrap();
        assert_eq!(
            root.create_dir(OsStr::new("d")).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        let d = root.child_dir(OsStr::new("d")).unwrap();
        d.create_new_file(OsStr::new("t")).unwrap().write_all(b"new").unwrap();
        assert!(d.create_new_file(OsStr::new("t")).is_err());
        root.create_new_file(OsStr::new("tmp")).unwrap().write_all(b"IMAGE").unwrap();
        root.rename(OsStr::new("tmp"), OsStr::new("logo.png")).unwrap();
        assert_eq!(std::fs::read_to_string(tmp.path().join("logo.png")).unwrap(), "IMAGE");
        assert!(!tmp.path().join("tmp").exists());
        d.remove_file(OsStr::new("t")).unwrap();
        assert!(d.entries().unwrap().is_empty());
    }

    #[test]
    fn final_paths_are_canonical_and_checked() {
        let tmp = TempDir::new();
        tmp.file("a.txt", "a");
        let root = Dir::open(tmp.path()).unwrap();
        let root_path = root.handle.root.clone();
        assert!(root_path.starts_with(&[u16::from(b'\\'), u16::from(b'\\'), u16::from(b'?')]));
        let opened = open_at(&root.handle, &name(b"a.txt").unwrap(), Open::ReadFile).unwrap();
        assert!(within_root(&opened).is_ok());
        // A handle whose root is elsewhere fails the final-path layer.
        let other = TempDir::new();
        let elsewhere = open_dir(other.path()).unwrap();
        let stray = Handle { handle: opened.handle.try_clone().unwrap(), root: elsewhere.root };
        assert_eq!(within_root(&stray).unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    }
}
