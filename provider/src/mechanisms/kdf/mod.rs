//! Key derivation functions for `C_DeriveKey`: HKDF (PKCS #11 3.0
//! mechanisms spec §2.43, RFC 5869), the simple derivations of §2.42
//! (concatenation, XOR, extraction) and key derivation by AES encryption
//! of data (§2.16.12), the SP 800-108 KDFs (§2.42), and the X9.63 / SP 800-56C KDFs that
//! follow an ECDH agreement (§2.3.13), the IKE PRF derivations (`ike`), the
//! TLS 1.2 PRF (`tls`); and PBKDF2 (`CKM_PKCS5_PBKD2`, a
//! `C_GenerateKey` mechanism). Each KDF takes plain key values and
//! returns the derived bytes; which object they come from and which object
//! the result becomes is the caller's business (`api::crypto`).

pub mod concat;
pub mod encrypt_data;
pub mod hkdf;
pub mod ike;
pub mod mac_oracle;
pub mod pbkdf2;
pub mod sp800_108;
pub mod tls;
pub mod x963;
