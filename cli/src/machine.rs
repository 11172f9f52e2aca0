//! The machine class a run was measured on: what a performance baseline is keyed by.
//!
//! A ratio such as "our module ÷ SoftHSM2, same run" cancels the machine's speed,
//! but not the instructions each side can use: SoftHSM2's OpenSSL takes AVX-512/IFMA
//! paths for RSA and P-256 where the CPU has them, and the pure-Rust code does not,
//! so the same build gives other ratios on another CPU. A baseline therefore holds
//! only for runs on the same class: same architecture, CPU vendor, CPU family and
//! model, the instruction-set features that crypto code picks at run time, the
//! number of cores this process may use, and the operating system release (which
//! fixes the OpenSSL SoftHSM2 is linked with). `docs/benchmarking.md`, "Baselines
//! in CI", explains how the gate uses it.

use serde::{Deserialize, Serialize};

/// The class of machine a run belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineClass {
    /// Short name of the class, e.g.
    /// `x86_64-amd-f25m17-2c-debian12-aes.pclmulqdq.sha.avx2`: the directory of
    /// its baselines under `baselines/`.
    pub id: String,
    /// CPU architecture (`x86_64`, `aarch64`).
    pub arch: String,
    /// CPU vendor: `intel`, `amd`, `hygon`, `arm`, `ampere`, … or `unknown`.
    pub vendor: String,
    /// CPU family and model: `f<family>m<model>` from CPUID on x86, `p<part>` (the
    /// MIDR part number) on aarch64.
    pub family: String,
    /// Crypto-relevant instruction-set features the CPU and OS offer, in a fixed
    /// order (see [`FEATURES`]).
    pub features: Vec<String>,
    /// Cores this process may run on.
    pub cores: usize,
    /// Operating system release, e.g. `debian12` (`ID` and `VERSION_ID` of
    /// os-release), or the OS name where there is none.
    pub os: String,
}

/// The features looked for, per architecture, in the order they appear in an id.
/// These are the ones that decide which code path OpenSSL (in SoftHSM2 and most
/// tokens) or our crates take for AES, GHASH, SHA-2, big-number and curve
/// arithmetic.
pub const FEATURES: &[(&str, &[&str])] = &[
    (
        "x86_64",
        &[
            "aes",
            "pclmulqdq",
            "sha",
            "avx2",
            "bmi2",
            "adx",
            "avx512f",
            "avx512ifma",
            "vaes",
            "vpclmulqdq",
            "sha512",
        ],
    ),
    ("aarch64", &["aes", "pmull", "sha2", "sha3", "sve2"]),
];

impl MachineClass {
    /// The class of this machine.
    pub fn detect() -> Self {
        let (vendor, family) = cpu_identity();
        Self::new(
            std::env::consts::ARCH,
            &vendor,
            &family,
            detected_features(),
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            &os_release(),
        )
    }

    /// A class from its parts (the id is derived from them).
    pub fn new(
        arch: &str,
        vendor: &str,
        family: &str,
        features: Vec<String>,
        cores: usize,
        os: &str,
    ) -> Self {
        let (arch, vendor, family, os) = (slug(arch), slug(vendor), slug(family), slug(os));
        let feats = if features.is_empty() {
            "none".to_string()
        } else {
            features.join(".")
        };
        MachineClass {
            id: format!("{arch}-{vendor}-{family}-{cores}c-{os}-{feats}"),
            arch,
            vendor,
            family,
            features,
            cores,
            os,
        }
    }

    /// What differs between two classes, one phrase per part (empty if the same
    /// class), e.g. `vendor intel vs amd`, `features -sha +avx512ifma`.
    pub fn differences(&self, other: &MachineClass) -> Vec<String> {
        let mut d = Vec::new();
        let mut part = |name: &str, a: &str, b: &str| {
            if a != b {
                d.push(format!("{name} {a} vs {b}"));
            }
        };
        part("arch", &self.arch, &other.arch);
        part("vendor", &self.vendor, &other.vendor);
        part("cpu", &self.family, &other.family);
        part("cores", &self.cores.to_string(), &other.cores.to_string());
        part("os", &self.os, &other.os);
        let only = |a: &[String], b: &[String]| -> Vec<String> {
            a.iter().filter(|f| !b.contains(f)).cloned().collect()
        };
        let (gone, new) = (
            only(&self.features, &other.features),
            only(&other.features, &self.features),
        );
        if !gone.is_empty() || !new.is_empty() {
            let mut s = String::from("features");
            for f in gone {
                s.push_str(&format!(" -{f}"));
            }
            for f in new {
                s.push_str(&format!(" +{f}"));
            }
            d.push(s);
        }
        if d.is_empty() && self.id != other.id {
            d.push(format!("id {} vs {}", self.id, other.id));
        }
        d
    }
}

/// Lowercase, with anything but letters, digits, `.` and `_` turned into `_`, so
/// the id is one path component.
fn slug(s: &str) -> String {
    let t: String = s
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if t.is_empty() { "unknown".into() } else { t }
}

/// Vendor and family/model of the CPU.
#[cfg(target_arch = "x86_64")]
fn cpu_identity() -> (String, String) {
    use std::arch::x86_64::__cpuid;
    let leaf0 = __cpuid(0);
    let mut id = Vec::with_capacity(12);
    for reg in [leaf0.ebx, leaf0.edx, leaf0.ecx] {
        id.extend_from_slice(&reg.to_le_bytes());
    }
    let vendor = x86_vendor(&String::from_utf8_lossy(&id));
    let family = if leaf0.eax >= 1 {
        let (f, m) = x86_family_model(__cpuid(1).eax);
        format!("f{f}m{m}")
    } else {
        "unknown".into()
    };
    (vendor, family)
}

/// Vendor and MIDR part of the CPU, from `/proc/cpuinfo` (Linux).
#[cfg(target_arch = "aarch64")]
fn cpu_identity() -> (String, String) {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    arm_identity(&info)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn cpu_identity() -> (String, String) {
    ("unknown".into(), "unknown".into())
}

/// Short vendor name from the CPUID vendor string.
#[cfg_attr(not(any(target_arch = "x86_64", test)), allow(dead_code))]
fn x86_vendor(id: &str) -> String {
    match id {
        "GenuineIntel" => "intel".into(),
        "AuthenticAMD" => "amd".into(),
        "HygonGenuine" => "hygon".into(),
        "CentaurHauls" | "  Shanghai  " => "zhaoxin".into(),
        other => slug(other),
    }
}

/// Display family and model from CPUID leaf 1 EAX (Intel SDM vol. 2A, CPUID
/// "Version Information"; AMD uses the same rule for family 0Fh and above).
#[cfg_attr(not(any(target_arch = "x86_64", test)), allow(dead_code))]
fn x86_family_model(eax: u32) -> (u32, u32) {
    let base_family = (eax >> 8) & 0xf;
    let base_model = (eax >> 4) & 0xf;
    let family = if base_family == 0xf {
        base_family + ((eax >> 20) & 0xff)
    } else {
        base_family
    };
    let model = if base_family == 0x6 || base_family == 0xf {
        (((eax >> 16) & 0xf) << 4) | base_model
    } else {
        base_model
    };
    (family, model)
}

/// Vendor (from the MIDR implementer code) and part number of the first CPU in
/// a `/proc/cpuinfo` text.
#[cfg_attr(not(any(target_arch = "aarch64", test)), allow(dead_code))]
fn arm_identity(cpuinfo: &str) -> (String, String) {
    let field = |name: &str| {
        cpuinfo
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == name)
            .map(|(_, v)| v.trim().to_ascii_lowercase())
    };
    let vendor = match field("CPU implementer").as_deref() {
        Some("0x41") => "arm".to_string(),
        Some("0x42") => "broadcom".into(),
        Some("0x43") => "cavium".into(),
        Some("0x46") => "fujitsu".into(),
        Some("0x48") => "hisilicon".into(),
        Some("0x4e") => "nvidia".into(),
        Some("0x50") => "apm".into(),
        Some("0x51") => "qualcomm".into(),
        Some("0x61") => "apple".into(),
        Some("0x6d") => "microsoft".into(),
        Some("0xc0") => "ampere".into(),
        Some(other) => format!("impl{}", other.trim_start_matches("0x")),
        None => "unknown".into(),
    };
    let family = field("CPU part")
        .map(|p| format!("p{}", p.trim_start_matches("0x")))
        .unwrap_or_else(|| "unknown".into());
    (vendor, family)
}

/// The features of [`FEATURES`] this CPU and OS offer (run-time detection, so
/// features the OS does not enable, such as AVX-512 state, count as absent).
fn detected_features() -> Vec<String> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let present = [
            ("aes", has!("aes")),
            ("pclmulqdq", has!("pclmulqdq")),
            ("sha", has!("sha")),
            ("avx2", has!("avx2")),
            ("bmi2", has!("bmi2")),
            ("adx", has!("adx")),
            ("avx512f", has!("avx512f")),
            ("avx512ifma", has!("avx512ifma")),
            ("vaes", has!("vaes")),
            ("vpclmulqdq", has!("vpclmulqdq")),
            ("sha512", has!("sha512")),
        ];
        out.extend(present.iter().filter(|p| p.1).map(|p| p.0.to_string()));
    }
    #[cfg(target_arch = "aarch64")]
    {
        use std::arch::is_aarch64_feature_detected as has;
        let present = [
            ("aes", has!("aes")),
            ("pmull", has!("pmull")),
            ("sha2", has!("sha2")),
            ("sha3", has!("sha3")),
            ("sve2", has!("sve2")),
        ];
        out.extend(present.iter().filter(|p| p.1).map(|p| p.0.to_string()));
    }
    out
}

/// `ID` + `VERSION_ID` of os-release (`debian12`, `ubuntu24.04`), else the OS name.
fn os_release() -> String {
    ["/etc/os-release", "/usr/lib/os-release"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .and_then(|text| parse_os_release(&text))
        .unwrap_or_else(|| std::env::consts::OS.to_string())
}

/// `ID` followed by `VERSION_ID` (if any) from an os-release text.
fn parse_os_release(text: &str) -> Option<String> {
    let get = |key: &str| {
        text.lines()
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim().trim_matches('"').trim_matches('\'').to_string())
            .filter(|v| !v.is_empty())
    };
    let id = get("ID")?;
    Some(format!("{id}{}", get("VERSION_ID").unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_has_a_class() {
        let c = MachineClass::detect();
        assert_eq!(c.arch, std::env::consts::ARCH);
        assert!(c.cores >= 1);
        assert!(!c.id.contains('/') && !c.id.contains(' '), "{}", c.id);
        assert!(c.id.starts_with(&format!("{}-{}-", c.arch, c.vendor)));
        assert!(c.id.contains(&format!("-{}c-", c.cores)));
        // The features come in the documented order and only from the list.
        let known = FEATURES
            .iter()
            .find(|(a, _)| *a == c.arch)
            .map_or(&[][..], |(_, f)| *f);
        let idx: Vec<usize> = c
            .features
            .iter()
            .map(|f| known.iter().position(|k| k == f).expect("listed feature"))
            .collect();
        assert!(idx.windows(2).all(|w| w[0] < w[1]), "{:?}", c.features);
        assert_eq!(MachineClass::detect(), c, "detection is stable");
    }

    #[test]
    fn x86_family_and_model_follow_the_cpuid_rules() {
        // AMD EPYC 9004 (Zen 4, Genoa): family 19h, model 11h.
        assert_eq!(x86_family_model(0x00A1_0F11), (25, 17));
        // AMD EPYC 9005 (Zen 5, Turin): family 1Ah, model 02h.
        assert_eq!(x86_family_model(0x00B0_0F21), (26, 2));
        // Intel Xeon Sapphire Rapids: family 6, model 8Fh.
        assert_eq!(x86_family_model(0x0008_06F8), (6, 143));
        // Intel Cascade Lake: family 6, model 55h.
        assert_eq!(x86_family_model(0x0005_0657), (6, 85));
        assert_eq!(x86_vendor("GenuineIntel"), "intel");
        assert_eq!(x86_vendor("AuthenticAMD"), "amd");
        assert_eq!(x86_vendor("KVMKVMKVM"), "kvmkvmkvm");
    }

    #[test]
    fn arm_identity_reads_implementer_and_part() {
        let graviton2 = "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd aes pmull sha1 sha2\n\
                         CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\n\
                         CPU part\t: 0xd0c\nCPU revision\t: 1\n";
        assert_eq!(arm_identity(graviton2), ("arm".into(), "pd0c".into()));
        let ampere = "CPU implementer : 0xc0\nCPU part : 0xac3\n";
        assert_eq!(arm_identity(ampere), ("ampere".into(), "pac3".into()));
        assert_eq!(arm_identity(""), ("unknown".into(), "unknown".into()));
    }

    #[test]
    fn os_release_gives_id_and_version() {
        let deb = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n\
                   VERSION_ID=\"12\"\nID=debian\n";
        assert_eq!(parse_os_release(deb).as_deref(), Some("debian12"));
        let sid = "ID=debian\nPRETTY_NAME=\"Debian GNU/Linux trixie/sid\"\n";
        assert_eq!(parse_os_release(sid).as_deref(), Some("debian"));
        assert_eq!(
            parse_os_release("ID=ubuntu\nVERSION_ID=\"24.04\"\n").as_deref(),
            Some("ubuntu24.04")
        );
        assert_eq!(parse_os_release("NAME=x\n"), None);
    }

    #[test]
    fn ids_are_one_path_component_and_differences_are_named() {
        let feats = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let intel = MachineClass::new(
            "x86_64",
            "intel",
            "f6m143",
            feats(&["aes", "sha", "avx2"]),
            2,
            "debian12",
        );
        assert_eq!(intel.id, "x86_64-intel-f6m143-2c-debian12-aes.sha.avx2");
        let amd = MachineClass::new(
            "x86_64",
            "amd",
            "f25m17",
            feats(&["aes", "avx2", "avx512ifma"]),
            2,
            "debian12",
        );
        assert_eq!(
            intel.differences(&amd),
            vec![
                "vendor intel vs amd".to_string(),
                "cpu f6m143 vs f25m17".into(),
                "features -sha +avx512ifma".into(),
            ]
        );
        assert!(intel.differences(&intel.clone()).is_empty());
        let odd = MachineClass::new("x86_64", "Some Vendor/Inc", "", vec![], 4, "");
        assert_eq!(odd.id, "x86_64-some_vendor_inc-unknown-4c-unknown-none");
    }
}
