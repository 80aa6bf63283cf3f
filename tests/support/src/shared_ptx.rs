//! Shared-memory accesses in PTX, for the checks that safe kernels touch shared
//! memory only through relaxed atomics of 32-bit words (a partially overlapping
//! pair of unsynchronised accesses is a data race in PTX's memory model).

/// A function's name and its instructions, each an opcode and its operands.
type Function = (String, Vec<(String, Vec<String>)>);

/// The shared-memory accesses of `ptx`, as `(function, instruction)`: loads, stores
/// and atomics in the `.shared` state space, or through a generic address derived
/// (by register arithmetic within the function) from `cvta.shared` or a `.shared`
/// symbol. xlog's tiles and collectives reach shared memory through generic
/// addresses that `cvta.shared` produced, so those are what this finds.
pub fn shared_accesses(ptx: &str) -> Vec<(String, String)> {
    let symbols: Vec<&str> = ptx
        .lines()
        .filter(|l| l.split_whitespace().any(|t| t == ".shared") && !l.trim().starts_with(".param"))
        .filter_map(|l| l.split(';').next()?.split_whitespace().last())
        .map(|name| name.split('[').next().unwrap_or(name))
        .collect();
    let mut functions: Vec<Function> = Vec::new();
    for line in ptx.lines() {
        let line = line.split("//").next().unwrap_or("").trim();
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if let Some(at) = tokens.iter().position(|t| *t == ".entry" || *t == ".func") {
            let name = tokens[at + 1..]
                .iter()
                .find(|t| !t.starts_with('('))
                .map_or("", |t| t.split('(').next().unwrap_or(t));
            functions.push((name.to_string(), Vec::new()));
            continue;
        }
        let Some((_, body)) = functions.last_mut() else {
            continue;
        };
        let instruction = line.trim_start_matches('{').trim_end_matches('}').trim();
        let instruction = match instruction.strip_prefix('@') {
            Some(guarded) => guarded.split_once(' ').map_or("", |(_, rest)| rest.trim()),
            None => instruction,
        };
        let instruction = instruction.trim_end_matches(';');
        if instruction.is_empty() || instruction.starts_with('.') || instruction.ends_with(':') {
            continue;
        }
        let (opcode, operands) = instruction
            .split_once(char::is_whitespace)
            .unwrap_or((instruction, ""));
        let operands = operands.split(',').map(|o| o.trim().to_string()).collect();
        body.push((opcode.to_string(), operands));
    }
    let mut found = Vec::new();
    for (function, body) in &functions {
        let mut tainted: std::collections::HashSet<&str> = std::collections::HashSet::new();
        loop {
            let before = tainted.len();
            for (opcode, operands) in body {
                let Some(dest) = operands.first().filter(|d| d.starts_with("%rd")) else {
                    continue;
                };
                let memory = ["ld.", "st.", "atom.", "red.", "setp."]
                    .iter()
                    .any(|p| opcode.starts_with(p));
                let source = opcode.starts_with("cvta.shared")
                    || operands[1..]
                        .iter()
                        .any(|o| tainted.contains(o.as_str()) || symbols.contains(&o.as_str()));
                if !memory && source {
                    tainted.insert(dest.as_str());
                }
            }
            if tainted.len() == before {
                break;
            }
        }
        for (opcode, operands) in body {
            if !["ld.", "st.", "atom.", "red."]
                .iter()
                .any(|p| opcode.starts_with(p))
            {
                continue;
            }
            let other_space = [".global", ".local", ".param", ".const"]
                .iter()
                .any(|s| opcode.contains(s));
            let through_shared = operands.iter().any(|o| {
                o.strip_prefix('[').is_some_and(|a| {
                    let base = a.split(['+', ']']).next().unwrap_or("").trim();
                    tainted.contains(base) || symbols.contains(&base)
                })
            });
            if opcode.contains(".shared") || (through_shared && !other_space) {
                found.push((
                    function.clone(),
                    format!("{opcode} {}", operands.join(", ")),
                ));
            }
        }
    }
    found
}

/// Whether a memory instruction moves one 32-bit word.
pub fn is_one_word(instruction: &str) -> bool {
    let opcode = instruction.split_whitespace().next().unwrap_or("");
    let width = opcode.rsplit('.').next().unwrap_or("");
    !opcode.contains(".v2")
        && !opcode.contains(".v4")
        && !opcode.contains(".v8")
        && ["b32", "u32", "s32", "f32"].contains(&width)
}

/// Whether a memory instruction is a strong (atomic) operation in PTX's memory
/// model: `atom` / `red`, or an `ld` / `st` with `.relaxed`, `.acquire`,
/// `.release` or `.volatile`.
pub fn is_strong(instruction: &str) -> bool {
    let opcode = instruction.split_whitespace().next().unwrap_or("");
    opcode.starts_with("atom.")
        || opcode.starts_with("red.")
        || [".relaxed.", ".acquire.", ".release.", ".volatile."]
            .iter()
            .any(|q| opcode.contains(q))
}
