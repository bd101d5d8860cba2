#!/usr/bin/env node
// gemini-relay's npm launcher: runs the relay binary of this platform's package (one of the
// optionalDependencies, of which npm installs only the one whose `os` and `cpu` match), with stdio
// inherited, signals passed on, and the binary's exit status or signal as its own. It tells the
// relay it was started this way (GEMINI_RELAY_LAUNCHER=npx), so `gemini-relay config <host>` names
// `npx -y gemini-relay` as the command instead of a path inside npx's cache.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');

const VERSION = '@VERSION@';
const RELEASES = '@RELEASES@';
// npm's platform name -> the release archive built for it.
const ARCHIVES = {
  'linux-x64': 'x86_64-unknown-linux-musl.tar.gz',
  'linux-arm64': 'aarch64-unknown-linux-musl.tar.gz',
  'darwin-arm64': 'aarch64-apple-darwin.tar.gz',
  'darwin-x64': 'x86_64-apple-darwin.tar.gz',
  'win32-x64': 'x86_64-pc-windows-gnu.zip',
};

function fail(message) {
  process.stderr.write(`gemini-relay: ${message}\n`);
  process.exit(1);
}

const platform = `${process.platform}-${process.arch}`;
const archive = ARCHIVES[platform];
if (!archive) {
  fail(`no build for ${platform}; the release archives at ${RELEASES} cover ` +
    `${Object.keys(ARCHIVES).join(', ')}; elsewhere build it with cargo (README, Install)`);
}
const pkg = `@gemini-relay/${platform}`;
let dir;
try {
  dir = path.dirname(require.resolve(`${pkg}/package.json`));
} catch (_) {
  fail(`npm installed no ${pkg} for this ${platform} system (optional dependencies off, or ` +
    `npm's os/cpu check refused it); use the archive gemini-relay-${VERSION}-${archive} ` +
    `from ${RELEASES}`);
}
const binary = path.join(dir, 'bin', process.platform === 'win32' ? 'gemini-relay.exe' : 'gemini-relay');
try {
  fs.accessSync(binary, fs.constants.X_OK);
} catch (err) {
  fail(err.code === 'ENOENT'
    ? `the binary ${binary} of ${pkg} is missing; reinstall gemini-relay`
    : `the binary ${binary} of ${pkg} is not executable (${err.code}); reinstall gemini-relay`);
}

const child = spawn(binary, process.argv.slice(2), {
  stdio: 'inherit',
  env: Object.assign({}, process.env, { GEMINI_RELAY_LAUNCHER: 'npx' }),
});
const forward = (signal) => () => child.kill(signal);
const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
for (const signal of signals) process.on(signal, forward(signal));
child.on('error', (err) => fail(`cannot run ${binary}: ${err.message}`));
child.on('exit', (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what the relay saw.
    for (const s of signals) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  } else {
    process.exit(code);
  }
});
