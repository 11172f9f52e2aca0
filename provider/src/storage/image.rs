//! A token's stored content, independent of the store that holds it: the
//! metadata row and its MAC, the generation, the object-set digest, every
//! object record with its MAC, and the GCM IV counters with their set's
//! state. The operator's tool copies tokens between stores with it
//! (`maintenance`: a PostgreSQL token backed up to a SQLite file, a backup
//! restored into PostgreSQL, a token moved from one store to the other):
//! read in one snapshot of the source, checked ([`TokenImage::check`]),
//! written in one transaction (or one renamed file) of the destination.
//!
//! Rows are copied as they are, sealed values and MACs included: the keys
//! of every MAC come from the metadata's integrity secret, which travels
//! with it, and nothing in a MAC names the store. Tombstones are not
//! copied: a copy has no readers that last looked before it was made (its
//! tombstone floor is its generation, so one that did reloads everything).

use super::integrity::{Integrity, MAC_LEN, Tag, toggle};
use super::iv_counters::IvTable;
use super::store::TokenMeta;
use crate::error::{Result, err};
use cryptoki_sys::CKR_DEVICE_ERROR;

/// One object record as stored.
#[derive(Clone, Debug)]
pub struct ImageObject {
    pub uid: Vec<u8>,
    pub generation: u64,
    pub class: u64,
    pub private: bool,
    pub label: Vec<u8>,
    pub ckid: Vec<u8>,
    pub attrs: Vec<u8>,
    pub mac: Vec<u8>,
}

/// What [`TokenImage::audit`] found.
#[derive(Clone, Debug, Default)]
pub struct Audit {
    /// Why the metadata cannot be trusted (nothing else was checked).
    pub unopenable: Option<String>,
    pub records: usize,
    /// Records whose MAC failed.
    pub unauthentic: usize,
    /// The record set or the counters do not add up.
    pub damage: Option<String>,
}

/// One GCM IV counter as stored: fingerprint, next value, MAC.
pub type IvRow = (Vec<u8>, u64, Vec<u8>);

/// A token's stored content (module documentation).
#[derive(Clone, Debug)]
pub struct TokenImage {
    pub serial: String,
    /// The metadata as stored (JSON) and its MAC.
    pub meta_json: Vec<u8>,
    pub meta_mac: Vec<u8>,
    pub generation: u64,
    pub digest: Vec<u8>,
    pub objects: Vec<ImageObject>,
    /// The counters' state (floor ‖ set tag), when the token has one.
    pub iv_state: Option<Vec<u8>>,
    pub iv_rows: Vec<IvRow>,
}

impl TokenImage {
    /// The metadata, once its MAC checked out.
    pub fn meta(&self) -> Result<TokenMeta> {
        let meta: TokenMeta =
            serde_json::from_slice(&self.meta_json).map_err(|_| self.bad("unreadable metadata"))?;
        let secret = meta
            .integrity
            .as_deref()
            .ok_or_else(|| self.bad("no integrity secret (a schema 1 file: open it once)"))?;
        if self.meta_mac[..] != Integrity::from_hex(secret)?.meta_mac(&self.meta_json)[..] {
            return Err(self.bad("the metadata failed authentication"));
        }
        if meta.serial != self.serial {
            return Err(self.bad("the metadata holds another token"));
        }
        Ok(meta)
    }

    /// What a check of everything the image carries finds: the
    /// metadata's MAC, every record's MAC, the set of records against its
    /// digest, and the IV counters.
    pub fn audit(&self) -> Audit {
        let mut audit = Audit {
            records: self.objects.len(),
            ..Audit::default()
        };
        let keys = match self
            .meta()
            .and_then(|m| Integrity::from_hex(m.integrity.as_deref().unwrap_or_default()))
        {
            Ok(k) => k,
            Err(_) => {
                audit.unopenable = Some(
                    "the metadata is unreadable, failed authentication or holds another token"
                        .into(),
                );
                return audit;
            }
        };
        let mut digest = [0u8; MAC_LEN];
        for o in &self.objects {
            if o.mac.len() != MAC_LEN
                || o.mac[..] != keys.record_mac(&o.uid, o.generation, o.class, o.private, &o.attrs)
            {
                audit.unauthentic += 1;
            }
            toggle(&mut digest, &o.mac);
        }
        if self.digest[..] != digest[..] {
            audit.damage = Some("the set of records differs from its digest".into());
        } else if super::iv_counters::verify_all(self, &keys, &self.serial).is_err() {
            audit.damage = Some("the GCM IV counters failed authentication".into());
        }
        audit
    }

    /// [`Self::audit`] as a verdict: the first problem, in words.
    pub fn check(&self) -> std::result::Result<(), String> {
        let a = self.audit();
        if let Some(why) = a.unopenable.or(a.damage) {
            return Err(why);
        }
        if a.unauthentic > 0 {
            return Err(format!("{} record(s) failed authentication", a.unauthentic));
        }
        Ok(())
    }

    fn bad(&self, what: &str) -> crate::error::Error {
        crate::log::error(format_args!("token {}: {what}", self.serial));
        err(CKR_DEVICE_ERROR)
    }
}

/// The image's counters, read as a store's (so `iv_counters` checks them
/// with the code that checks them in place). Read-only.
impl IvTable for TokenImage {
    fn state_blob(&self) -> Result<Option<Vec<u8>>> {
        Ok(self.iv_state.clone())
    }

    fn set_state_blob(&self, _: &[u8]) -> Result<()> {
        Err(err(CKR_DEVICE_ERROR))
    }

    fn row_macs(&self) -> Result<Vec<Vec<u8>>> {
        Ok(self.iv_rows.iter().map(|r| r.2.clone()).collect())
    }

    fn fingerprints(&self) -> Result<Vec<Vec<u8>>> {
        Ok(self.iv_rows.iter().map(|r| r.0.clone()).collect())
    }

    fn row(&self, fingerprint: &Tag) -> Result<Option<(i64, Vec<u8>)>> {
        Ok(self
            .iv_rows
            .iter()
            .find(|r| r.0[..] == fingerprint[..])
            .map(|r| (r.1 as i64, r.2.clone())))
    }

    fn set_row(&self, _: &Tag, _: u64, _: &Tag) -> Result<()> {
        Err(err(CKR_DEVICE_ERROR))
    }

    fn clear_rows(&self) -> Result<()> {
        Err(err(CKR_DEVICE_ERROR))
    }
}

/// Writes an image's counters into a store's table (in its transaction).
pub(crate) fn write_iv(image: &TokenImage, table: &impl IvTable) -> Result<()> {
    for (fp, next, mac) in &image.iv_rows {
        let fp: Tag = fp[..].try_into().map_err(|_| err(CKR_DEVICE_ERROR))?;
        let mac: Tag = mac[..].try_into().map_err(|_| err(CKR_DEVICE_ERROR))?;
        table.set_row(&fp, *next, &mac)?;
    }
    if let Some(state) = &image.iv_state {
        table.set_state_blob(state)?;
    }
    Ok(())
}
