//! Key and key-pair generation (base spec §5.15 `C_GenerateKey`,
//! `C_GenerateKeyPair`; §4.13 domain parameters with
//! `CKM_DSA_PARAMETER_GEN`, mechanisms spec §2.2.10).

use super::new_key::{BaseProtection, insert_secret};
use crate::api::key_policy::{self, Rules};
use crate::api::objects::{
    check_write_access, insert_new, insert_objects, new_object, set_key_origin,
};
use crate::api::session::Session;
use crate::api::template::{self, Origin};
use crate::attributes::{Attr, Attributes};
use crate::error::{Result, err};
use crate::mechanisms::{self, Mechanism};
use cryptoki_sys::*;

/// `C_GenerateKeyPair`: returns (public, private) handles.
pub fn generate_key_pair(
    session: &Session,
    mech: &Mechanism<'_>,
    public: &[Attr],
    private: &[Attr],
) -> Result<(CK_OBJECT_HANDLE, CK_OBJECT_HANDLE)> {
    mechanisms::require(mech, CKF_GENERATE_KEY_PAIR)?;
    let key_type = mechanisms::pair_key_type(mech.ty)?;
    let token = &session.token;
    let is_so = token.logged_in() == Some(CKU_SO);
    let (_, _, pub_tables) =
        template::tables_for_new(public, Some(CKO_PUBLIC_KEY), Some(key_type))?;
    let (_, _, priv_tables) =
        template::tables_for_new(private, Some(CKO_PRIVATE_KEY), Some(key_type))?;
    let rules = Rules::of(token.config());
    let mut pub_attrs = key_policy::build(public, pub_tables, Origin::Generate, is_so, rules)?;
    let mut priv_attrs = key_policy::build(private, priv_tables, Origin::Generate, is_so, rules)?;
    check_write_access(
        session,
        pub_attrs.flag(CKA_TOKEN),
        pub_attrs.flag(CKA_PRIVATE),
    )?;
    check_write_access(
        session,
        priv_attrs.flag(CKA_TOKEN),
        priv_attrs.flag(CKA_PRIVATE),
    )?;
    if mech.ty == CKM_RSA_PKCS_KEY_PAIR_GEN
        && pub_attrs
            .ulong(CKA_MODULUS_BITS)
            .is_some_and(|bits| bits < CK_ULONG::from(token.config().rsa_min_bits))
    {
        // The token's `rsa_min_bits` (docs/configuration.md).
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    let generated = mechanisms::generate_key_pair(mech, &pub_attrs, &priv_attrs)?;
    // A parameter set (ML-DSA, PKCS#11 3.2) belongs in the public template;
    // one in the private template too must name the same set.
    if let Some(set) = priv_attrs.ulong(CKA_PARAMETER_SET)
        && generated.private.ulong(CKA_PARAMETER_SET) != Some(set)
    {
        return Err(err(CKR_TEMPLATE_INCONSISTENT));
    }
    merge(&mut pub_attrs, &generated.public);
    merge(&mut priv_attrs, &generated.private);
    for (attrs, class) in [
        (&mut pub_attrs, CKO_PUBLIC_KEY),
        (&mut priv_attrs, CKO_PRIVATE_KEY),
    ] {
        attrs.set_ulong(CKA_CLASS, class);
        attrs.set_ulong(CKA_KEY_TYPE, generated.key_type);
        set_key_origin(attrs, Origin::Generate, Some(mech.ty));
    }
    let public = new_object(session, pub_attrs, pub_tables)?;
    let private = new_object(session, priv_attrs, priv_tables)?;
    let handles = insert_objects(session, vec![public, private])?;
    Ok((handles[0], handles[1]))
}

fn merge(into: &mut Attributes, from: &Attributes) {
    for (ty, v) in from.iter() {
        into.set(*ty, v.clone());
    }
}

/// `C_GenerateKey`.
pub fn generate_key(
    session: &Session,
    mech: &Mechanism<'_>,
    template: &[Attr],
) -> Result<CK_OBJECT_HANDLE> {
    mechanisms::require(mech, CKF_GENERATE)?;
    if let Some(key_type) = mechanisms::domain_parameter_key_type(mech.ty) {
        return generate_domain_parameters(session, mech, template, key_type);
    }
    let (default_type, allowed) = mechanisms::secret_key_types(mech.ty)?;
    let given = template::template_value(template, CKA_KEY_TYPE)?
        .map(crate::attributes::decode_ulong)
        .transpose()?;
    let key_type = given.unwrap_or(default_type);
    if !allowed.contains(&key_type) {
        return Err(err(CKR_TEMPLATE_INCONSISTENT));
    }
    let value_len = template::template_value(template, CKA_VALUE_LEN)?
        .map(crate::attributes::decode_ulong)
        .transpose()?;
    let value_len = value_len
        .map(|l| usize::try_from(l).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID)))
        .transpose()?;
    if mech.ty == CKM_PKCS5_PBKD2 {
        // The caller knows the password: the key is treated as derived from
        // a readable base (CKA_LOCAL, CKA_ALWAYS_SENSITIVE and
        // CKA_NEVER_EXTRACTABLE false), never as one the token generated.
        let value = mechanisms::generate_pbkdf2(mech, key_type, value_len)?;
        let known = BaseProtection {
            sensitive: false,
            extractable: true,
            always_sensitive: false,
            never_extractable: false,
        };
        return insert_secret(
            session,
            template,
            Some(key_type),
            Origin::Derive,
            mech.ty,
            &value,
            Some(known),
        );
    }
    let value = mechanisms::generate_key(mech, value_len)?;
    insert_secret(
        session,
        template,
        Some(key_type),
        Origin::Generate,
        mech.ty,
        &value,
        None,
    )
}

/// `C_GenerateKey` with a parameter-generation mechanism
/// (`CKM_DSA_PARAMETER_GEN`, mechanisms spec §2.2.10): a
/// `CKO_DOMAIN_PARAMETERS` object (§4.13) of `key_type`.
fn generate_domain_parameters(
    session: &Session,
    mech: &Mechanism<'_>,
    template: &[Attr],
    key_type: CK_KEY_TYPE,
) -> Result<CK_OBJECT_HANDLE> {
    let token = &session.token;
    let (_, given_type, tables) =
        template::tables_for_new(template, Some(CKO_DOMAIN_PARAMETERS), Some(key_type))?;
    if given_type != Some(key_type) {
        return Err(err(CKR_TEMPLATE_INCONSISTENT));
    }
    let mut attrs = key_policy::build(
        template,
        tables,
        Origin::Generate,
        token.logged_in() == Some(CKU_SO),
        Rules::of(token.config()),
    )?;
    check_write_access(session, attrs.flag(CKA_TOKEN), attrs.flag(CKA_PRIVATE))?;
    let generated = mechanisms::generate_domain_parameters(mech, &attrs)?;
    merge(&mut attrs, &generated);
    attrs.set_ulong(CKA_CLASS, CKO_DOMAIN_PARAMETERS);
    attrs.set_ulong(CKA_KEY_TYPE, key_type);
    set_key_origin(&mut attrs, Origin::Generate, Some(mech.ty));
    insert_new(session, attrs, tables)
}
