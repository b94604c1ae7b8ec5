//! Rust identifiers for schema names: `Logical_Switch_Port` -> `LogicalSwitchPort`,
//! `allow-related` -> `AllowRelated`, `type` -> `r#type`.

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "static", "struct", "trait", "true", "try", "type", "unsafe", "use",
    "where", "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv",
    "typeof", "unsized", "virtual", "yield",
];

/// Table name to a type name. All-caps words are acronyms (`ACL` -> `Acl`,
/// `NB_Global` -> `NbGlobal`); mixed-case words keep their inner capitals
/// (`QoS` -> `QoS`, `Open_vSwitch` -> `OpenVSwitch`).
pub fn type_name(table: &str) -> String {
    let mut out = String::new();
    for word in table
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let all_caps = word.chars().all(|c| !c.is_ascii_lowercase());
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            if all_caps {
                out.extend(chars.map(|c| c.to_ascii_lowercase()));
            } else {
                out.extend(chars);
            }
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, 'T');
    }
    out
}

/// An enum value to a variant name: words split at any non-alphanumeric
/// character, each capitalised (`dnat_and_snat` -> `DnatAndSnat`,
/// `OpenFlow10` -> `OpenFlow10`, `802.1q` -> `V8021q`).
pub fn variant_name(value: &str) -> String {
    let mut out = String::new();
    for word in value
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.is_empty() {
        out.push_str("Empty");
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    if out == "Other" {
        out.push_str("Value");
    }
    out
}

/// Column name to a field identifier (`type` -> `r#type`).
pub fn field_name(column: &str) -> String {
    let base = snake(column);
    if KEYWORDS.contains(&base.as_str()) {
        format!("r#{base}")
    } else {
        base
    }
}

/// Column name to the associated-constant name of its typed column handle.
pub fn const_name(column: &str) -> String {
    snake(column).to_ascii_uppercase()
}

/// Table name to a module/file name (`Logical_Switch_Port` -> `logical_switch_port`).
pub fn module_name(table: &str) -> String {
    let name = snake(&table.to_ascii_lowercase());
    if KEYWORDS.contains(&name.as_str()) {
        format!("{name}_table")
    } else {
        name
    }
}

fn snake(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(type_name("Logical_Switch_Port"), "LogicalSwitchPort");
        assert_eq!(type_name("ACL"), "Acl");
        assert_eq!(type_name("NB_Global"), "NbGlobal");
        assert_eq!(type_name("QoS"), "QoS");
        assert_eq!(type_name("Open_vSwitch"), "OpenVSwitch");
        assert_eq!(variant_name("allow-related"), "AllowRelated");
        assert_eq!(variant_name("dnat_and_snat"), "DnatAndSnat");
        assert_eq!(variant_name("802.1q"), "V8021q");
        assert_eq!(variant_name("other"), "OtherValue");
        assert_eq!(field_name("type"), "r#type");
        assert_eq!(field_name("match"), "r#match");
        assert_eq!(const_name("external_ids"), "EXTERNAL_IDS");
        assert_eq!(module_name("Open_vSwitch"), "open_vswitch");
    }
}
