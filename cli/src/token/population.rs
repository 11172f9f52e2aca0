//! Objects made on a named token for the scaling ops (`token-*-N`,
//! `cold-start-N`), destroyed when the module is closed, and how a cold-start
//! probe process reaches the module's token.

use cryptoki_sys::*;

use super::random::random_bytes;
use super::raw::{RawModule, Template};

/// A private AES-256 token key with a random value.
pub fn token_key(label: &str, id: &[u8]) -> Template {
    Template::new()
        .ulong(CKA_CLASS, CKO_SECRET_KEY)
        .ulong(CKA_KEY_TYPE, CKK_AES)
        .bool(CKA_TOKEN, true)
        .bool(CKA_PRIVATE, true)
        .bool(CKA_SENSITIVE, true)
        .bool(CKA_ENCRYPT, true)
        .bool(CKA_DECRYPT, true)
        .bytes(CKA_LABEL, label.as_bytes())
        .bytes(CKA_ID, id)
        .bytes(CKA_VALUE, &random_bytes::<32>())
}

/// The population objects of one module's token.
#[derive(Default)]
pub struct Population {
    tag: String,
    handles: Vec<CK_OBJECT_HANDLE>,
}

impl Population {
    /// The random tag that makes this run's labels and ids distinct.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    pub fn label(&self, i: usize) -> String {
        format!("hsm-bench-pop-{}-{i}", self.tag)
    }

    pub fn id(&self, i: usize) -> Vec<u8> {
        let mut id = self.tag.as_bytes().to_vec();
        id.extend_from_slice(&(i as u32).to_be_bytes());
        id
    }

    /// Number of population objects on the token.
    pub fn count(&self) -> usize {
        self.handles.len()
    }

    /// Creates or destroys population objects until there are exactly `n`.
    pub fn ensure(
        &mut self,
        raw: &RawModule,
        session: CK_SESSION_HANDLE,
        n: usize,
    ) -> Result<(), CK_RV> {
        if self.tag.is_empty() {
            self.tag = random_bytes::<4>()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
        }
        while self.handles.len() > n {
            let h = self.handles.pop().expect("non-empty");
            let rv = raw.destroy_object(session, h);
            if rv != CKR_OK {
                return Err(rv);
            }
        }
        while self.handles.len() < n {
            let i = self.handles.len();
            let (rv, h) = raw.create_object(session, &mut token_key(&self.label(i), &self.id(i)));
            if rv != CKR_OK {
                return Err(rv);
            }
            self.handles.push(h);
        }
        Ok(())
    }

    /// Destroys every population object (named tokens, at the end).
    pub fn clear(&mut self, raw: &RawModule, session: CK_SESSION_HANDLE) {
        for h in self.handles.drain(..) {
            let _ = raw.destroy_object(session, h);
        }
    }

    /// Label and id of the object the find ops look for (the middle one).
    pub fn target(&self) -> Option<(usize, CK_OBJECT_HANDLE)> {
        let i = self.handles.len() / 2;
        self.handles.get(i).map(|&h| (i, h))
    }
}

/// The command line of a cold-start probe: this executable's hidden
/// `cold-start` subcommand on the module's library and token.
#[derive(Debug, Clone)]
pub struct ProbeCommand {
    /// The module library.
    pub module: std::path::PathBuf,
    /// Label of the token (slot ids may change between processes:
    /// SoftHSM2 renumbers a slot once its token is initialised).
    pub token_label: String,
    /// User PIN (written to the probe's standard input, never to its arguments).
    pub pin: String,
}

#[cfg(test)]
mod tests {
    use super::Population;

    #[test]
    fn labels_and_ids_are_distinct() {
        let pop = Population {
            tag: "abcd1234".into(),
            handles: vec![],
        };
        assert_ne!(pop.label(1), pop.label(10));
        assert_ne!(pop.id(1), pop.id(256));
        assert!(pop.target().is_none());
    }
}
