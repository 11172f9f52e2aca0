//! `hsm-bench machine`: the machine class baselines are keyed by.

use crate::cli::{MachineArgs, MachineFormat};
use crate::commands::output::write_or_print;
use crate::error::{EXIT_OK, Result};
use crate::machine::MachineClass;
use crate::sysinfo;

/// `hsm-bench machine`: this machine's class.
pub fn machine(args: &MachineArgs) -> Result<i32> {
    let c = MachineClass::detect();
    let text = if args.id {
        c.id.clone()
    } else if args.format == MachineFormat::Json {
        serde_json::to_string_pretty(&c).expect("machine class serialises")
    } else {
        let known = crate::machine::FEATURES
            .iter()
            .find(|(a, _)| *a == c.arch)
            .map_or(&[][..], |(_, f)| *f);
        let absent: Vec<&str> = known
            .iter()
            .copied()
            .filter(|f| !c.features.iter().any(|x| x == f))
            .collect();
        let rows = vec![
            vec!["class".to_string(), c.id.clone()],
            vec!["arch".into(), c.arch.clone()],
            vec!["vendor".into(), c.vendor.clone()],
            vec![
                "cpu".into(),
                format!("{} ({})", c.family, sysinfo::system().cpu_model),
            ],
            vec!["cores".into(), c.cores.to_string()],
            vec!["os".into(), c.os.clone()],
            vec!["features".into(), c.features.join(" ")],
            vec!["absent".into(), absent.join(" ")],
            vec!["baselines".into(), format!("baselines/{}/", c.id)],
        ];
        crate::report::text::table(&["part".into(), "value".into()], &rows, 2)
    };
    write_or_print(&text, None)?;
    Ok(EXIT_OK)
}
