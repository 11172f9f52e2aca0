//! Template sequences: create, generate, copy, set, get (size queries and
//! short buffers included), find and destroy objects with fuzzed templates,
//! on one session per input.
#![no_main]

use arbitrary::Arbitrary;
use cryptoki_sys::*;
use dalek_pkcs11_fuzz::*;
use libfuzzer_sys::fuzz_target;
use std::ptr::null_mut;

const KEY_GEN: &[CK_MECHANISM_TYPE] = &[
    CKM_AES_KEY_GEN,
    CKM_GENERIC_SECRET_KEY_GEN,
    CKM_DES3_KEY_GEN,
    CKM_DES_KEY_GEN,
];
const PAIR_GEN: &[CK_MECHANISM_TYPE] = &[CKM_EC_KEY_PAIR_GEN, CKM_EC_EDWARDS_KEY_PAIR_GEN];

#[derive(Arbitrary, Debug)]
enum Op {
    Create(Vec<FuzzAttr>),
    GenerateKey(u8, Vec<FuzzAttr>),
    GenerateKeyPair(u8, Vec<FuzzAttr>, Vec<FuzzAttr>),
    Copy(u8, Vec<FuzzAttr>),
    Set(u8, Vec<FuzzAttr>),
    Get(u8, Vec<(u16, OutBuf)>),
    Size(u8),
    Find(Vec<FuzzAttr>, u8, bool),
    Destroy(u8),
}

fn mech(list: &[CK_MECHANISM_TYPE], i: u8) -> CK_MECHANISM {
    CK_MECHANISM {
        // Past the list: values no mechanism has (never the slow RSA key
        // generation, CKM 0).
        mechanism: list
            .get(i as usize)
            .copied()
            .unwrap_or(0x1000 + i as CK_ULONG),
        pParameter: null_mut(),
        ulParameterLen: 0,
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let h = harness();
    let f = h.f;
    let session = FuzzSession::open();
    let s = session.h;
    let mut objects: Vec<CK_OBJECT_HANDLE> = h.keys.iter().map(|k| k.1).collect();
    let fixed = objects.len();
    let pick = |objects: &[CK_OBJECT_HANDLE], i: u8| objects[i as usize % objects.len()];
    // SAFETY (every call below): the module is called with live buffers of
    // the lengths stated, as a well-behaved consumer would; the fuzzed part
    // is what those buffers hold.
    for op in ops.iter().take(32) {
        match op {
            Op::Create(attrs) => {
                let mut t = Template::new(attrs);
                let (p, n) = t.parts();
                let mut out = 0;
                if call("C_CreateObject", || unsafe {
                    (f.C_CreateObject.unwrap())(s, p, n, &mut out)
                }) == CKR_OK
                {
                    objects.push(out);
                }
            }
            Op::GenerateKey(m, attrs) => {
                let mut t = Template::new(attrs);
                let (p, n) = t.parts();
                let mut m = mech(KEY_GEN, *m);
                let mut out = 0;
                if call("C_GenerateKey", || unsafe {
                    (f.C_GenerateKey.unwrap())(s, &mut m, p, n, &mut out)
                }) == CKR_OK
                {
                    objects.push(out);
                }
            }
            Op::GenerateKeyPair(m, public, private) => {
                let (mut a, mut b) = (Template::new(public), Template::new(private));
                let ((pa, na), (pb, nb)) = (a.parts(), b.parts());
                let mut m = mech(PAIR_GEN, *m);
                let (mut x, mut y) = (0, 0);
                let rv = call("C_GenerateKeyPair", || unsafe {
                    (f.C_GenerateKeyPair.unwrap())(s, &mut m, pa, na, pb, nb, &mut x, &mut y)
                });
                if rv == CKR_OK {
                    objects.extend([x, y]);
                }
            }
            Op::Copy(i, attrs) => {
                let mut t = Template::new(attrs);
                let (p, n) = t.parts();
                let mut out = 0;
                let src = pick(&objects, *i);
                if call("C_CopyObject", || unsafe {
                    (f.C_CopyObject.unwrap())(s, src, p, n, &mut out)
                }) == CKR_OK
                {
                    objects.push(out);
                }
            }
            Op::Set(i, attrs) => {
                let mut t = Template::new(attrs);
                let (p, n) = t.parts();
                let o = pick(&objects, *i);
                call("C_SetAttributeValue", || unsafe {
                    (f.C_SetAttributeValue.unwrap())(s, o, p, n)
                });
            }
            Op::Get(i, wanted) => {
                let mut bufs: Vec<(CK_ATTRIBUTE_TYPE, Option<Vec<u8>>, CK_ULONG)> = wanted
                    .iter()
                    .take(32)
                    .map(|(ty, b)| {
                        let ty = TYPES.get(*ty as usize).copied().unwrap_or(*ty as CK_ULONG);
                        let (buf, len) = b.make();
                        (ty, buf, len)
                    })
                    .collect();
                let mut raw: Vec<CK_ATTRIBUTE> = bufs
                    .iter_mut()
                    .map(|(ty, buf, len)| CK_ATTRIBUTE {
                        type_: *ty,
                        pValue: out_ptr(buf) as *mut _,
                        ulValueLen: *len,
                    })
                    .collect();
                let o = pick(&objects, *i);
                let (p, n) = if raw.is_empty() {
                    (null_mut(), 0)
                } else {
                    (raw.as_mut_ptr(), raw.len() as CK_ULONG)
                };
                // A nested-template attribute reads this zeroed buffer as an
                // array of empty entries (or refuses its size or alignment).
                call("C_GetAttributeValue", || unsafe {
                    (f.C_GetAttributeValue.unwrap())(s, o, p, n)
                });
            }
            Op::Size(i) => {
                let mut size = 0;
                let o = pick(&objects, *i);
                call("C_GetObjectSize", || unsafe {
                    (f.C_GetObjectSize.unwrap())(s, o, &mut size)
                });
            }
            Op::Find(attrs, max, finish) => {
                let mut t = Template::new(attrs);
                let (p, n) = t.parts();
                if call("C_FindObjectsInit", || unsafe {
                    (f.C_FindObjectsInit.unwrap())(s, p, n)
                }) == CKR_OK
                {
                    let mut found = vec![0 as CK_OBJECT_HANDLE; *max as usize + 1];
                    let mut count = 0;
                    call("C_FindObjects", || unsafe {
                        (f.C_FindObjects.unwrap())(
                            s,
                            found.as_mut_ptr(),
                            *max as CK_ULONG,
                            &mut count,
                        )
                    });
                    assert!(count <= *max as CK_ULONG, "more handles than room");
                    if *finish {
                        call("C_FindObjectsFinal", || unsafe {
                            (f.C_FindObjectsFinal.unwrap())(s)
                        });
                    }
                }
            }
            Op::Destroy(i) => {
                if objects.len() > fixed {
                    let at = fixed + *i as usize % (objects.len() - fixed);
                    let o = objects.remove(at);
                    call("C_DestroyObject", || unsafe {
                        (f.C_DestroyObject.unwrap())(s, o)
                    });
                }
            }
        }
    }
    // Token objects outlive the session: remove what this input made.
    for o in objects.drain(fixed..) {
        call("C_DestroyObject", || unsafe {
            (f.C_DestroyObject.unwrap())(s, o)
        });
    }
});
