//! Generated source in a canonical form: what the gate hashes, and what tells whether two tags
//! expand an island to the same program.

/// `code` as hashed: kernel names removed ([`without_kernel_names`]) and CubeCL's variables
/// (`v41`, `info_v42`) renumbered in order of first appearance, so the hash does not depend on
/// how many ids the process allocated before.
pub fn canonical(code: &str) -> String {
    let code = without_kernel_names(code);
    let bytes = code.as_bytes();
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i] == b'v'
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric()) || bytes[i - 1] == b'_')
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
        if starts {
            let end = i + 1 + bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
            if !bytes.get(end).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                let next = seen.len();
                let n = *seen.entry(&code[i..end]).or_insert(next);
                out.push_str(&format!("v{n}"));
                i = end;
                continue;
            }
        }
        let ch = code[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// `code` with CubeCL's kernel names (`kernel_416b0a91`: a hash of the kernel's id, which differs
/// between a debug and a release build of the same source) replaced by `kernel`, so a record's
/// hash depends on the code alone.
pub fn without_kernel_names(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("kernel_") {
        out.push_str(&rest[..at + "kernel".len()]);
        let after = &rest[at + "kernel_".len()..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        let word_goes_on = after.as_bytes().get(hex).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
        rest = if hex >= 6 && !word_goes_on { &after[hex..] } else { &rest[at + "kernel".len()..] };
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn kernel_names_do_not_reach_the_hash() {
        let debug = "__global__ void kernel_416b0a91(int* v) { kernel_info_st x; }";
        let release = "__global__ void kernel_fbb11b46(int* v) { kernel_info_st x; }";
        assert_eq!(super::without_kernel_names(debug), super::without_kernel_names(release));
        assert_eq!(super::without_kernel_names(debug), "__global__ void kernel(int* v) { kernel_info_st x; }");
        assert_ne!(super::without_kernel_names("a + b"), super::without_kernel_names("a - b"));
    }

    #[test]
    fn variables_are_renumbered_by_first_use() {
        let a = "int const v41 = x; info_v42 = v41 + v7; uint4 w; v41v;";
        let b = "int const v3 = x; info_v9 = v3 + v1; uint4 w; v41v;";
        assert_eq!(super::canonical(a), super::canonical(b));
        assert_eq!(super::canonical(a), "int const v0 = x; info_v1 = v0 + v2; uint4 w; v41v;");
        assert_ne!(super::canonical("v1 + v2"), super::canonical("v1 + v1"));
    }
}
