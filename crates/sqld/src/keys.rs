//! The SQL node's key material, kept in its data directory as mysqld's
//! `auto_generate_certs` keeps it: a self-signed TLS certificate
//! (`server-cert.pem`, `server-key.pem`) when none is configured, and the
//! RSA key pair `caching_sha2_password` clients encrypt their password
//! with when they connect without TLS (`private_key.pem`, `public_key.pem`).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Bits of the generated RSA key (MySQL's default).
pub const RSA_KEY_BITS: usize = 2048;

/// TLS and RSA material for the listener.
pub struct Keys {
    pub tls: Arc<rustls::ServerConfig>,
    pub rsa_private: rsa::PrivateKey,
    pub rsa_public_pem: Vec<u8>,
}

fn write_private(path: &Path, contents: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    file.write_all(contents)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Loads the key material from `data_dir`, generating what is missing;
/// `certificate` and `key` override the TLS pair (`--ssl-cert`, `--ssl-key`).
pub fn load_or_generate(
    data_dir: &Path,
    certificate: Option<&Path>,
    key: Option<&Path>,
) -> Result<Keys, String> {
    fs::create_dir_all(data_dir)
        .map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
    let (certificate_path, key_path): (PathBuf, PathBuf) = match (certificate, key) {
        (Some(c), Some(k)) => (c.to_path_buf(), k.to_path_buf()),
        (None, None) => {
            let c = data_dir.join("server-cert.pem");
            let k = data_dir.join("server-key.pem");
            if !c.exists() || !k.exists() {
                let generated = rcgen::generate_simple_self_signed(vec![
                    "localhost".to_string(),
                    "127.0.0.1".to_string(),
                ])
                .map_err(|e| format!("cannot generate a TLS certificate: {e}"))?;
                let _ = fs::remove_file(&c);
                let _ = fs::remove_file(&k);
                write_private(&k, generated.signing_key.serialize_pem().as_bytes())?;
                fs::write(&c, generated.cert.pem())
                    .map_err(|e| format!("cannot write {}: {e}", c.display()))?;
            }
            (c, k)
        }
        _ => return Err("--ssl-cert and --ssl-key go together".to_string()),
    };
    let certificates: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(&certificate_path)
            .map_err(|e| format!("cannot read {}: {e}", certificate_path.display()))?
            .collect::<Result<_, _>>()
            .map_err(|e| format!("cannot parse {}: {e}", certificate_path.display()))?;
    if certificates.is_empty() {
        return Err(format!(
            "{} holds no certificate",
            certificate_path.display()
        ));
    }
    let private_key = PrivateKeyDer::from_pem_file(&key_path)
        .map_err(|e| format!("cannot read the key {}: {e}", key_path.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certificates, private_key)
        .map_err(|e| format!("the TLS certificate and key do not fit: {e}"))?;
    let rsa_path = data_dir.join("private_key.pem");
    let rsa_public_path = data_dir.join("public_key.pem");
    let rsa_private = if rsa_path.exists() {
        let text = fs::read_to_string(&rsa_path)
            .map_err(|e| format!("cannot read {}: {e}", rsa_path.display()))?;
        rsa::PrivateKey::from_pkcs8_pem(&text)
            .map_err(|e| format!("cannot parse {}: {e}", rsa_path.display()))?
    } else {
        let mut rng = OsRandom;
        let key = rsa::PrivateKey::new(&mut rng, RSA_KEY_BITS)
            .map_err(|e| format!("cannot generate an RSA key: {e}"))?;
        let pem = key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| format!("cannot encode the RSA key: {e}"))?;
        write_private(&rsa_path, pem.as_bytes())?;
        key
    };
    let rsa_public_pem = rsa_private
        .to_public_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| format!("cannot encode the RSA public key: {e}"))?
        .into_bytes();
    if !rsa_public_path.exists() {
        fs::write(&rsa_public_path, &rsa_public_pem)
            .map_err(|e| format!("cannot write {}: {e}", rsa_public_path.display()))?;
    }
    Ok(Keys {
        tls: Arc::new(tls),
        rsa_private,
        rsa_public_pem,
    })
}

/// The operating system's random source as an RNG for key generation.
struct OsRandom;

impl rand_core::TryRng for OsRandom {
    type Error = getrandom::Error;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut bytes = [0u8; 4];
        getrandom::fill(&mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    fn try_fill_bytes(&mut self, destination: &mut [u8]) -> Result<(), Self::Error> {
        getrandom::fill(destination)
    }
}

impl rand_core::TryCryptoRng for OsRandom {}

/// Decrypts a `caching_sha2_password` client's RSA-encrypted password
/// (OAEP with SHA-1, as MySQL 8.0 clients encrypt).
pub fn decrypt_password(key: &rsa::PrivateKey, ciphertext: &[u8]) -> Option<Vec<u8>> {
    key.oaep_decrypt::<sha1::Sha1>(ciphertext).ok()
}
