//! What a check of a token finds ([`Report`]), for `maintenance` and
//! `transfer` and the operator's tool that prints it.

/// What [`verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// The token's serial number.
    pub serial: String,
    /// Why the file cannot be opened as its token at all (not a database,
    /// metadata that fails authentication, a copy of another token); the
    /// records were not read.
    pub unopenable: Option<String>,
    /// Object records read.
    pub records: usize,
    /// Records whose authentication (MAC) failed: edited or corrupted.
    pub unauthentic: usize,
    /// The set of records differs from its digest (records added or
    /// deleted outside the module), or another integrity complaint.
    pub damage: Option<String>,
    /// What `PRAGMA integrity_check` said, when not "ok".
    pub sqlite: Vec<String>,
    /// Tombstones of objects that still exist (a deletion that did not
    /// take; readers would drop a live object).
    pub orphaned_tombstones: usize,
    /// Leftover files of an unfinished token creation or restore.
    pub temporary_files: Vec<String>,
}

impl Report {
    /// Whether everything checked out.
    pub fn ok(&self) -> bool {
        self.unauthentic == 0
            && self.unopenable.is_none()
            && self.damage.is_none()
            && self.sqlite.is_empty()
            && self.orphaned_tombstones == 0
            && self.temporary_files.is_empty()
    }
}
