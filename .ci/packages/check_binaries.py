#!/usr/bin/env python3
"""Checks that every package in dist/ holds the very binary of its platform's release archive:
the npm platform package, the wheel (tagged for that platform) and the MCP bundle. Exits 1 naming
each package whose binary differs or is missing. Python 3 standard library only.

Usage: check_binaries.py DIST VERSION
"""

import glob
import os
import sys
import tarfile
import zipfile

NAME = "gemini-relay"
# npm's platform name, the Rust target, and the platform part of the wheel's tag.
PLATFORMS = [
    ("linux-x64", "x86_64-unknown-linux-musl", "manylinux_2_17_x86_64.musllinux_1_2_x86_64"),
    ("linux-arm64", "aarch64-unknown-linux-musl", "manylinux_2_17_aarch64.musllinux_1_2_aarch64"),
    ("darwin-arm64", "aarch64-apple-darwin", "macosx_11_0_arm64"),
    ("darwin-x64", "x86_64-apple-darwin", "macosx_11_0_x86_64"),
    ("win32-x64", "x86_64-pc-windows-gnu", "win_amd64"),
]


def from_tar(path, member):
    with tarfile.open(path) as archive:
        return archive.extractfile(member).read()


def from_zip(path, member):
    with zipfile.ZipFile(path) as archive:
        return archive.read(member)


def main():
    dist, version = sys.argv[1:3]
    failures = []
    for npm, target, tag in PLATFORMS:
        exe = ".exe" if "windows" in target else ""
        folder = f"{NAME}-{version}-{target}"
        if exe:
            reference = from_zip(os.path.join(dist, folder + ".zip"), f"{folder}/{NAME}{exe}")
        else:
            reference = from_tar(os.path.join(dist, folder + ".tar.gz"), f"{folder}/{NAME}")
        wheels = glob.glob(os.path.join(dist, f"gemini_relay-{version}-py3-none-*{tag}.whl"))
        found = {
            f"npm @{NAME}/{npm}": lambda: from_tar(
                os.path.join(dist, f"{NAME}-{npm}-{version}.tgz"), f"package/bin/{NAME}{exe}"),
            f"bundle {npm}": lambda: from_zip(
                os.path.join(dist, f"{NAME}-{version}-{npm}.mcpb"), f"server/{NAME}{exe}"),
            f"wheel {tag}": lambda: from_zip(
                wheels[0], f"gemini_relay-{version}.data/scripts/{NAME}{exe}"),
        }
        for what, read in found.items():
            try:
                same = read() == reference
            except (OSError, KeyError, IndexError) as err:
                failures.append(f"{what}: no binary ({err or 'no such wheel'})")
                continue
            if not same:
                failures.append(f"{what}: the binary differs from {folder}'s")
    for failure in failures:
        print(f"check_binaries: {failure}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"check_binaries: the npm package, wheel and bundle of each of {len(PLATFORMS)} platforms "
          "hold the archive's binary")


if __name__ == "__main__":
    main()
