#!/usr/bin/env python3
"""Writes gemini-relay's install packages into dist/ from the release binaries `make dist` built.

`make dist` runs it after the archives and before packing: it stages the npm packages (the
launcher `gemini-relay` and one package per platform holding that platform's binary), the
pyproject maturin builds the wheels from, the MCP bundles (written here, as zips with fixed times,
sorted entries and fixed modes), the host packages (Claude Code plugin, Gemini CLI extension, agy
plugin), the Homebrew formula and the MCP registry's server.json. The Makefile then packs the npm
packages (`npm pack`) and builds the wheels (maturin). Python 3 standard library only.

Usage: generate.py DIST VERSION OWNER RELEASES EPOCH
  DIST      the dist/ directory, holding the archives and their SHA256SUMS
  VERSION   the crate's version
  OWNER     the GitHub owner: the registry name is io.github.<OWNER>/gemini-relay
  RELEASES  the URL the release's files are downloaded from
  EPOCH     SOURCE_DATE_EPOCH: the time every file in a bundle carries
"""

import hashlib
import json
import os
import shutil
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "gemini-relay"
DESCRIPTION = "MCP server that puts Google's Antigravity CLI (agy) and the Gemini CLI behind MCP tools"
# npm's name of each platform, its Rust target, the OS name the MCP bundle and npm use, and npm's cpu.
PLATFORMS = [
    ("linux-x64", "x86_64-unknown-linux-musl", "linux", "x64"),
    ("linux-arm64", "aarch64-unknown-linux-musl", "linux", "arm64"),
    ("darwin-arm64", "aarch64-apple-darwin", "darwin", "arm64"),
    ("darwin-x64", "x86_64-apple-darwin", "darwin", "x64"),
    ("win32-x64", "x86_64-pc-windows-gnu", "win32", "x64"),
]
# How every host starts the relay: through npm, which fetches the binary for its platform.
NPX = {"command": "npx", "args": ["-y", NAME]}


def archive_name(version, target):
    ext = "zip" if "windows" in target else "tar.gz"
    return f"{NAME}-{version}-{target}.{ext}"


def binary_path(target):
    exe = ".exe" if "windows" in target else ""
    return os.path.join("target", target, "release", NAME + exe)


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        file.write(text)
    os.chmod(path, mode)


def write_json(path, value):
    write(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def copy(source, path, mode):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shutil.copyfile(source, path)
    os.chmod(path, mode)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_sums(dist):
    sums = {}
    with open(os.path.join(dist, "SHA256SUMS"), encoding="utf-8") as file:
        for line in file:
            digest, name = line.split(maxsplit=1)
            sums[name.strip().lstrip("*")] = digest
    return sums


def host_timeout_ms():
    """The host timeout `gemini-relay config gemini` writes: the relay's default deadline plus its
    margin, read from the x86_64 binary itself so that the packages and `config` agree."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_MCP_", "AGY_", "GEMINI_RELAY_"))}
    out = subprocess.run(
        [binary_path("x86_64-unknown-linux-musl"), "config", "gemini"],
        env=env, capture_output=True, check=True, text=True,
    ).stdout
    return json.loads(out)["mcpServers"][NAME]["timeout"]


def npm_packages(stage, version, owner, releases):
    """The launcher package and one package per platform, staged for `npm pack`."""
    registry_name = f"io.github.{owner}/{NAME}"
    repository = f"https://github.com/{owner}/{NAME}"
    launcher = os.path.join(stage, NAME)
    with open(os.path.join(HERE, "launcher.js"), encoding="utf-8") as file:
        script = file.read().replace("@VERSION@", version).replace("@RELEASES@", releases)
    write(os.path.join(launcher, "bin", "gemini-relay.js"), script, 0o755)
    write_json(os.path.join(launcher, "package.json"), {
        "name": NAME,
        "version": version,
        "description": DESCRIPTION,
        "license": "MIT",
        "repository": {"type": "git", "url": f"git+{repository}.git"},
        "mcpName": registry_name,
        "bin": {NAME: "bin/gemini-relay.js"},
        "files": ["bin"],
        "engines": {"node": ">=16"},
        "optionalDependencies": {f"@{NAME}/{npm}": version for npm, _, _, _ in PLATFORMS},
    })
    write(os.path.join(launcher, "README.md"),
          f"# {NAME}\n\n{DESCRIPTION}.\n\n"
          "```sh\nnpx -y gemini-relay                 # serves MCP on stdio\n"
          "npx -y gemini-relay config claude   # the configuration for a host\n```\n\n"
          f"npm installs the binary for your platform from one of the `@{NAME}/*` packages. "
          f"Documentation: {repository}\n")
    for npm, target, os_name, cpu in PLATFORMS:
        package = os.path.join(stage, npm)
        exe = ".exe" if os_name == "win32" else ""
        copy(binary_path(target), os.path.join(package, "bin", NAME + exe), 0o755)
        write_json(os.path.join(package, "package.json"), {
            "name": f"@{NAME}/{npm}",
            "version": version,
            "description": f"The {NAME} binary for {npm} ({target}); install {NAME} instead",
            "license": "MIT",
            "repository": {"type": "git", "url": f"git+{repository}.git"},
            "os": [os_name],
            "cpu": [cpu],
            "files": ["bin"],
        })
        write(os.path.join(package, "README.md"),
              f"# @{NAME}/{npm}\n\nThe `{NAME}` binary for {npm} ({target}), used by the "
              f"[`{NAME}`](https://www.npmjs.com/package/{NAME}) package: `npx -y {NAME}`.\n")


def pypi_project(stage, version, owner):
    """The pyproject.toml and README maturin builds every wheel from (`bindings = "bin"`: the
    binary becomes the wheel's script). The README names the registry entry (`mcp-name:`). No
    SBOM: maturin's names the checkout's path, so the wheels of two checkouts would differ."""
    registry_name = f"io.github.{owner}/{NAME}"
    repository = f"https://github.com/{owner}/{NAME}"
    write(os.path.join(stage, "pyproject.toml"),
          '[build-system]\nrequires = ["maturin>=1.9,<2"]\nbuild-backend = "maturin"\n\n'
          f'[project]\nname = "{NAME}"\nversion = "{version}"\n'
          f'description = "{DESCRIPTION}"\nreadme = "README.md"\nlicense = "MIT"\n'
          'requires-python = ">=3.8"\n\n'
          f'[project.urls]\nRepository = "{repository}"\n\n'
          '[tool.maturin]\nbindings = "bin"\nmanifest-path = "../../Cargo.toml"\n'
          'locked = true\nstrip = false\n\n[tool.maturin.sbom]\nrust = false\n')
    write(os.path.join(stage, "README.md"),
          f"# {NAME}\n\n{DESCRIPTION}.\n\n"
          "```sh\nuvx gemini-relay                    # serves MCP on stdio\n"
          "pipx install gemini-relay           # or: pip install gemini-relay\n```\n\n"
          f"Documentation: {repository}\n\n<!-- mcp-name: {registry_name} -->\n")


def zip_entry(name, mode, stamp):
    info = zipfile.ZipInfo(name, stamp)
    info.create_system = 3
    info.external_attr = mode << 16
    return info


def bundles(dist, version, owner, epoch):
    """One MCP bundle per platform: a zip with manifest.json, the binary under server/, the
    README and the LICENSE, its entries sorted, with fixed modes and the commit's time, deflated at
    level 9."""
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    repository = f"https://github.com/{owner}/{NAME}"
    names = []
    for npm, target, os_name, _ in PLATFORMS:
        exe = ".exe" if os_name == "win32" else ""
        entry = f"server/{NAME}{exe}"
        manifest = {
            "manifest_version": "0.3",
            "name": NAME,
            "display_name": NAME,
            "version": version,
            "description": DESCRIPTION,
            "author": {"name": owner, "url": repository},
            "repository": {"type": "git", "url": repository},
            "homepage": repository,
            "license": "MIT",
            "server": {
                "type": "binary",
                "entry_point": entry,
                "mcp_config": {"command": "${__dirname}/" + entry, "args": []},
            },
            "tools_generated": True,
            "prompts_generated": True,
            "compatibility": {"platforms": [os_name]},
        }
        files = {
            "LICENSE": (open("LICENSE", "rb").read(), 0o644),
            "README.md": (open("README.md", "rb").read(), 0o644),
            "manifest.json": ((json.dumps(manifest, indent=2) + "\n").encode(), 0o644),
            entry: (open(binary_path(target), "rb").read(), 0o755),
        }
        name = f"{NAME}-{version}-{npm}.mcpb"
        path = os.path.join(dist, name)
        # Files only, as `mcpb pack` writes them: `mcpb unpack` takes a folder's own entry for a file.
        with zipfile.ZipFile(path, "w") as bundle:
            for file in sorted(files):
                data, mode = files[file]
                bundle.writestr(zip_entry(file, 0o100000 | mode, stamp), data, zipfile.ZIP_DEFLATED, 9)
        names.append((npm, name))
    return names


def host_packages(dist, version, owner, timeout_ms):
    """The Claude Code plugin, the Gemini CLI extension and the agy plugin, each starting the relay
    with `npx -y gemini-relay`."""
    repository = f"https://github.com/{owner}/{NAME}"
    claude = os.path.join(dist, "claude-plugin")
    write_json(os.path.join(claude, ".claude-plugin", "plugin.json"), {
        "name": NAME,
        "version": version,
        "description": DESCRIPTION,
        "author": {"name": owner, "url": repository},
        "homepage": repository,
        "repository": repository,
        "license": "MIT",
        "keywords": ["mcp", "gemini", "antigravity", "agy"],
        "mcpServers": {NAME: NPX},
    })
    # The marketplace in the repository installs the plugin from npm, as this package.
    write_json(os.path.join(claude, "package.json"), {
        "name": f"@{NAME}/claude-plugin",
        "version": version,
        "description": f"The Claude Code plugin of {NAME}: starts it with npx -y {NAME}",
        "license": "MIT",
        "repository": {"type": "git", "url": f"git+{repository}.git"},
        "files": [".claude-plugin"],
    })
    write_json(os.path.join(dist, "gemini-extension", "gemini-extension.json"), {
        "name": NAME,
        "version": version,
        "description": DESCRIPTION,
        "mcpServers": {NAME: dict(NPX, timeout=timeout_ms)},
    })
    agy = os.path.join(dist, "agy-plugin")
    write_json(os.path.join(agy, "plugin.json"), {
        "name": NAME, "description": DESCRIPTION, "version": version,
    })
    write_json(os.path.join(agy, "mcp_config.json"), {"mcpServers": {NAME: NPX}})


FORMULA = """\
# Homebrew formula for {name} {version}: the release archive of the machine's system and CPU.
class GeminiRelay < Formula
  desc "MCP server for Google's Antigravity CLI (agy) and the Gemini CLI"
  homepage "{repository}"
  version "{version}"
  license "MIT"

  on_macos do
    on_arm do
      url "{releases}/{darwin_arm}"
      sha256 "{darwin_arm_sha}"
    end
    on_intel do
      url "{releases}/{darwin_x64}"
      sha256 "{darwin_x64_sha}"
    end
  end

  on_linux do
    on_arm do
      url "{releases}/{linux_arm}"
      sha256 "{linux_arm_sha}"
    end
    on_intel do
      url "{releases}/{linux_x64}"
      sha256 "{linux_x64_sha}"
    end
  end

  def install
    bin.install "{name}"
  end

  test do
    assert_match "{name} #{{version}}", shell_output("#{{bin}}/{name} --version")
  end
end
"""


def formula(dist, version, owner, releases, sums):
    names = {npm: archive_name(version, target) for npm, target, _, _ in PLATFORMS}
    write(os.path.join(dist, f"{NAME}.rb"), FORMULA.format(
        name=NAME, version=version, releases=releases,
        repository=f"https://github.com/{owner}/{NAME}",
        darwin_arm=names["darwin-arm64"], darwin_arm_sha=sums[names["darwin-arm64"]],
        darwin_x64=names["darwin-x64"], darwin_x64_sha=sums[names["darwin-x64"]],
        linux_arm=names["linux-arm64"], linux_arm_sha=sums[names["linux-arm64"]],
        linux_x64=names["linux-x64"], linux_x64_sha=sums[names["linux-x64"]],
    ))


def server_json(dist, version, owner, releases, bundle_names):
    stdio = {"type": "stdio"}
    packages = [
        {"registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org",
         "identifier": NAME, "version": version, "transport": stdio},
        {"registryType": "pypi", "registryBaseUrl": "https://pypi.org",
         "identifier": NAME, "version": version, "transport": stdio},
    ]
    for _, name in bundle_names:
        packages.append({
            "registryType": "mcpb", "identifier": f"{releases}/{name}", "version": version,
            "fileSha256": sha256(os.path.join(dist, name)), "transport": stdio,
        })
    description = "Antigravity CLI (agy) and Gemini CLI as MCP tools: one static binary"
    assert len(description) <= 100
    write_json(os.path.join(dist, "server.json"), {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": f"io.github.{owner}/{NAME}",
        "title": NAME,
        "description": description,
        "version": version,
        "repository": {"url": f"https://github.com/{owner}/{NAME}", "source": "github"},
        "packages": packages,
    })


def main():
    dist, version, owner, releases, epoch = sys.argv[1:6]
    epoch = int(epoch)
    sums = read_sums(dist)
    for npm, target, _, _ in PLATFORMS:
        if archive_name(version, target) not in sums:
            sys.exit(f"generate.py: {dist}/SHA256SUMS has no {archive_name(version, target)}")
    for stage in ("npm", "pypi"):
        shutil.rmtree(os.path.join(dist, f".stage-{stage}"), ignore_errors=True)
    for folder in ("claude-plugin", "gemini-extension", "agy-plugin"):
        shutil.rmtree(os.path.join(dist, folder), ignore_errors=True)
    npm_packages(os.path.join(dist, ".stage-npm"), version, owner, releases)
    pypi_project(os.path.join(dist, ".stage-pypi"), version, owner)
    names = bundles(dist, version, owner, epoch)
    host_packages(dist, version, owner, host_timeout_ms())
    formula(dist, version, owner, releases, sums)
    server_json(dist, version, owner, releases, names)


if __name__ == "__main__":
    main()
