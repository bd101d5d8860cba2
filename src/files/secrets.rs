//! The secrets filter of directory walks: names of files that hold
//! credentials are never inlined through `@dir`, `@.` or a glob (a file named directly still is).

/// Whether a file named `name`, directly inside a directory named `parent`, looks like it holds a
/// secret. Both comparisons ignore ASCII case.
///
/// The names: `.env` and `.env.<anything>`, `.envrc`, `.netrc`, `.pgpass`, `.htpasswd`, `.npmrc`,
/// `.pypirc`, `.git-credentials`, `credentials.json`, `secrets.yaml`, `secrets.yml`,
/// `secrets.json`; anything ending in `.pem`, `.key`, `.jks`, `.p8`, `.p12`, `.pfx` or `.keystore`;
/// SSH key files `id_<algorithm>` (rsa, dsa, ecdsa, ed25519, ecdsa_sk, ed25519_sk, xmss), also
/// with a `_<suffix>` or `-<suffix>` without dots (`id_ed25519_work`) and with `.pub`; and the
/// files `.aws/credentials`, `.docker/config.json` and `.kube/config`.
pub(crate) fn is_secret(parent: &[u8], name: &[u8]) -> bool {
    let name = name.to_ascii_lowercase();
    let name = name.as_slice();
    if SECRET_NAMES.contains(&name) || is_key_file(name) {
        return true;
    }
    if name.strip_prefix(b".env.").is_some_and(|rest| !rest.is_empty()) {
        return true;
    }
    if SECRET_EXTENSIONS.iter().any(|ext| name.len() > ext.len() && name.ends_with(ext)) {
        return true;
    }
    let parent = parent.to_ascii_lowercase();
    SECRET_FILES_IN.iter().any(|(dir, file)| parent == *dir && name == *file)
}

/// Exact (lower-case) names.
const SECRET_NAMES: [&[u8]; 12] = [
    b".env",
    b".envrc",
    b".netrc",
    b".pgpass",
    b".htpasswd",
    b".npmrc",
    b".pypirc",
    b".git-credentials",
    b"credentials.json",
    b"secrets.yaml",
    b"secrets.yml",
    b"secrets.json",
];

/// Extensions; the name must have at least one character before the extension.
const SECRET_EXTENSIONS: [&[u8]; 7] =
    [b".pem", b".key", b".jks", b".p8", b".p12", b".pfx", b".keystore"];

/// `(directory, file)` pairs.
const SECRET_FILES_IN: [(&[u8], &[u8]); 3] =
    [(b".aws", b"credentials"), (b".docker", b"config.json"), (b".kube", b"config")];

/// SSH key algorithms as ssh-keygen names the default key files.
const KEY_ALGORITHMS: [&[u8]; 7] =
    [b"rsa", b"dsa", b"ecdsa", b"ed25519", b"ecdsa_sk", b"ed25519_sk", b"xmss"];

/// `id_<algorithm>[(_|-)<suffix without dots>][.pub]`.
fn is_key_file(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(b"id_") else { return false };
    let rest = rest.strip_suffix(b".pub").unwrap_or(rest);
    if rest.contains(&b'.') {
        return false;
    }
    KEY_ALGORITHMS.iter().any(|algorithm| match rest.strip_prefix(*algorithm) {
        Some(b"") => true,
        Some([b'_' | b'-', suffix @ ..]) => !suffix.is_empty(),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        let secrets = [
            ("", ".env"),
            ("", ".env.production"),
            ("", ".ENV.local"),
            ("", ".env.a\nb"),
            ("", ".envrc"),
            ("", ".netrc"),
            ("", ".pgpass"),
            ("", ".htpasswd"),
            ("", ".npmrc"),
            ("", ".pypirc"),
            ("", ".git-credentials"),
            ("", "credentials.json"),
            ("config", "Credentials.JSON"),
            ("", "secrets.yaml"),
            ("", "secrets.yml"),
            ("", "secrets.json"),
            ("certs", "server.pem"),
            ("certs", "tls.key"),
            ("certs", "a.b.key"),
            ("certs", "release.jks"),
            ("certs", "AuthKey_ABC.p8"),
            ("certs", "store.p12"),
            ("certs", "Client.PFX"),
            ("android", "upload.keystore"),
            (".ssh", "id_rsa"),
            ("keys", "id_RSA.PUB"),
            ("keys", "id_dsa"),
            ("keys", "id_ecdsa"),
            ("keys", "id_ed25519"),
            ("keys", "id_ed25519.pub"),
            ("keys", "id_ed25519_sk"),
            ("keys", "id_ecdsa_sk"),
            ("keys", "id_ecdsa_sk.pub"),
            ("keys", "id_xmss"),
            ("keys", "id_ed25519_work"),
            ("keys", "id_rsa-github.pub"),
            (".aws", "credentials"),
            (".AWS", "Credentials"),
            (".docker", "config.json"),
            (".kube", "config"),
        ];
        for (parent, name) in secrets {
            assert!(is_secret(parent.as_bytes(), name.as_bytes()), "{parent}/{name:?} is a secret");
        }
    }

    #[test]
    fn ordinary_names() {
        let ordinary = [
            ("", ".env."),
            ("", "env"),
            ("", ".envrc.example"),
            ("", "README.md"),
            ("keys", "id_rsa.pub.pub"),
            ("keys", "id_rsa2"),
            ("keys", "id_rsa_"),
            ("src", "id_rsa_helper.py"),
            ("src", "id_generator.ts"),
            ("", ".pem"),
            ("", "pem"),
            ("", "a.pem.txt"),
            ("", ".p8"),
            ("", "credentials"),
            ("aws", "credentials"),
            (".aws", "config"),
            ("", "config.json"),
            (".docker", "daemon.json"),
            ("kube", "config"),
            ("", "secrets.toml"),
            ("", "my-secrets.yaml"),
        ];
        for (parent, name) in ordinary {
            assert!(
                !is_secret(parent.as_bytes(), name.as_bytes()),
                "{parent}/{name:?} is not a secret"
            );
        }
    }
}
