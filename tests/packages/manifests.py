#!/usr/bin/env python3
"""Checks every manifest `make dist` wrote: each parses, names the crate's version, and agrees with
the others (the registry name in server.json, npm's mcpName and the wheel's `mcp-name:`; the
bundles' SHA-256 in server.json; the formula's archive hashes and SHA256SUMS; each host package
starting `npx -y gemini-relay`). Prints one line per check and exits 1 on the first failure.

Usage: manifests.py DIST (run from the repository's root)
"""

import glob
import hashlib
import json
import os
import re
import sys
import tarfile
import zipfile

NAME = "gemini-relay"
NPX = {"command": "npx", "args": ["-y", NAME]}
PLATFORMS = {"linux-x64": ("linux", "x64"), "linux-arm64": ("linux", "arm64"),
             "darwin-arm64": ("darwin", "arm64"), "darwin-x64": ("darwin", "x64"),
             "win32-x64": ("win32", "x64")}


def check(ok, what):
    if not ok:
        print(f"manifests: FAIL: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"manifests: ok: {what}")


def sha256(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def tar_json(path, member):
    with tarfile.open(path) as archive:
        return json.load(archive.extractfile(member))


def main():
    dist = sys.argv[1]
    version = re.search(r'^version = "(.*)"', open("Cargo.toml").read(), re.M).group(1)
    sums = {}
    for line in open(os.path.join(dist, "SHA256SUMS")):
        digest, name = line.split()
        sums[name] = digest
    for name, digest in sums.items():
        check(sha256(os.path.join(dist, name)) == digest, f"SHA256SUMS matches {name}")

    server = json.load(open(os.path.join(dist, "server.json")))
    registry_name = server["name"]
    check(re.fullmatch(r"io\.github\.[A-Za-z0-9-]+/gemini-relay", registry_name) is not None,
          f"server.json name {registry_name}")
    check(server["version"] == version, f"server.json version {server['version']}")
    check(len(server["description"]) <= 100, "server.json description within 100 characters")
    kinds = {}
    for package in server["packages"]:
        kinds.setdefault(package["registryType"], []).append(package)
        check(package["transport"] == {"type": "stdio"} and package["version"] == version,
              f"server.json {package['registryType']} {package['identifier']}: stdio, {version}")
        if package["registryType"] == "mcpb":
            file = os.path.join(dist, package["identifier"].rsplit("/", 1)[1])
            check(sha256(file) == package["fileSha256"], f"server.json fileSha256 of {file}")
    check([p["identifier"] for p in kinds["npm"]] == [NAME], "server.json names the npm package")
    check([p["identifier"] for p in kinds["pypi"]] == [NAME], "server.json names the PyPI package")
    check(len(kinds["mcpb"]) == len(PLATFORMS), "server.json names one bundle per platform")

    launcher = tar_json(os.path.join(dist, f"{NAME}-{version}.tgz"), "package/package.json")
    check(launcher["version"] == version and launcher["mcpName"] == registry_name,
          f"npm {NAME}: version {version}, mcpName {registry_name}")
    check(launcher["optionalDependencies"] == {f"@{NAME}/{p}": version for p in PLATFORMS},
          "npm optionalDependencies: the five platform packages at exactly this version")
    check(not launcher.get("dependencies") and not launcher.get("scripts"),
          "npm launcher: no dependencies, no install scripts")
    for platform, (os_name, cpu) in PLATFORMS.items():
        package = tar_json(os.path.join(dist, f"{NAME}-{platform}-{version}.tgz"), "package/package.json")
        check(package["name"] == f"@{NAME}/{platform}" and package["version"] == version
              and package["os"] == [os_name] and package["cpu"] == [cpu],
              f"npm @{NAME}/{platform}: version, os {os_name}, cpu {cpu}")
        with zipfile.ZipFile(os.path.join(dist, f"{NAME}-{version}-{platform}.mcpb")) as bundle:
            manifest = json.loads(bundle.read("manifest.json"))
        check(manifest["version"] == version and manifest["server"]["type"] == "binary"
              and manifest["compatibility"]["platforms"] == [os_name],
              f"bundle {platform}: version, server.type binary, platforms [{os_name}]")

    wheels = sorted(glob.glob(os.path.join(dist, "*.whl")))
    check(len(wheels) == len(PLATFORMS), f"{len(wheels)} wheels, one per platform")
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            text = archive.read(meta).decode()
        check(f"\nVersion: {version}\n" in text and f"mcp-name: {registry_name}" in text,
              f"{os.path.basename(wheel)}: version {version}, mcp-name {registry_name}")
    for arch in ("x86_64", "aarch64"):
        check(any(f"manylinux_2_17_{arch}.musllinux_1_2_{arch}" in w for w in wheels),
              f"the {arch} Linux wheel is tagged manylinux_2_17 and musllinux_1_2")

    plugin = json.load(open(os.path.join(dist, "claude-plugin", ".claude-plugin", "plugin.json")))
    check(plugin["version"] == version and plugin["mcpServers"][NAME] == NPX,
          "Claude Code plugin: version, npx -y gemini-relay")
    packed = tar_json(os.path.join(dist, f"{NAME}-claude-plugin-{version}.tgz"),
                      "package/.claude-plugin/plugin.json")
    check(packed == plugin, "the Claude Code plugin's npm package holds that plugin.json")
    market = json.load(open(os.path.join(".claude-plugin", "marketplace.json")))
    entry = next(p for p in market["plugins"] if p["name"] == NAME)
    check(entry["version"] == version and entry["source"].get("version") == version
          and entry["source"].get("package") == f"@{NAME}/claude-plugin",
          f".claude-plugin/marketplace.json: {NAME} {version} from @{NAME}/claude-plugin")
    extension = json.load(open(os.path.join(dist, "gemini-extension", "gemini-extension.json")))
    server_entry = dict(extension["mcpServers"][NAME])
    check(extension["version"] == version and server_entry.pop("timeout", 0) > 600000
          and server_entry == NPX, "Gemini CLI extension: version, npx -y gemini-relay, timeout")
    agy = json.load(open(os.path.join(dist, "agy-plugin", "plugin.json")))
    check(agy["version"] == version and agy["name"] == NAME and agy["description"],
          "agy plugin.json: name, description, version")
    agy_mcp = json.load(open(os.path.join(dist, "agy-plugin", "mcp_config.json")))
    check(agy_mcp["mcpServers"][NAME] == NPX, "agy mcp_config.json: npx -y gemini-relay")

    formula = open(os.path.join(dist, f"{NAME}.rb")).read()
    check(f'version "{version}"' in formula, f"formula: version {version}")
    pairs = re.findall(r'url "[^"]*/([^"/]+)"\s+sha256 "([0-9a-f]{64})"', formula)
    check(len(pairs) == 4 and all(sums.get(name) == digest for name, digest in pairs),
          "formula: four url/sha256 pairs, each equal to SHA256SUMS")
    check(re.search(r"test do\s+.*--version", formula, re.S) is not None, "formula: test do runs --version")


if __name__ == "__main__":
    main()
