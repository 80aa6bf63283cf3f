//! The CPU peer: the same two Datalog programs evaluated by
//! [Ascent](https://crates.io/crates/ascent), a semi-naive Datalog engine embedded in
//! Rust through macros.
//!
//! `ascent!` compiles a program into a struct evaluated on the calling thread;
//! `ascent_par!` compiles it into one evaluated on rayon's global pool (its size is
//! rayon's default, one thread a core, or `RAYON_NUM_THREADS`). Both deduplicate
//! every relation, so the counts are of distinct tuples, as on the GPU.
//!
//! The programs are the ones the GPU evaluates, written with the recursive relation
//! first in each recursive body: Ascent joins a body's clauses left to right,
//! looking each later clause up by the variables bound so far, so this order makes
//! each semi-naive step scan the new tuples (the delta) and probe `edge` by key.
//! Clause order changes the plan only, never the result.

use ascent::{ascent, ascent_par};

ascent! {
    struct TcSequential;
    relation edge(u32, u32);
    relation path(u32, u32);
    path(x, y) <-- edge(x, y);
    path(x, z) <-- path(x, y), edge(y, z);
}

ascent_par! {
    struct TcParallel;
    relation edge(u32, u32);
    relation path(u32, u32);
    path(x, y) <-- edge(x, y);
    path(x, z) <-- path(x, y), edge(y, z);
}

ascent! {
    struct SgSequential;
    relation edge(u32, u32);
    relation sg(u32, u32);
    sg(x, y) <-- edge(p, x), edge(p, y), if x != y;
    sg(x, y) <-- sg(a, b), edge(a, x), edge(b, y);
}

ascent_par! {
    struct SgParallel;
    relation edge(u32, u32);
    relation sg(u32, u32);
    sg(x, y) <-- edge(p, x), edge(p, y), if x != y;
    sg(x, y) <-- sg(a, b), edge(a, x), edge(b, y);
}

/// Number of `path` tuples in the transitive closure of `edges`:
///
/// ```text
/// path(x, y) :- edge(x, y).
/// path(x, z) :- path(x, y), edge(y, z).
/// ```
///
/// `parallel` runs Ascent's parallel evaluation (`ascent_par!`) on rayon's global
/// pool; otherwise the sequential one (`ascent!`) runs on the calling thread.
/// Duplicate edges are allowed and count once.
pub fn transitive_closure(edges: &[(u32, u32)], parallel: bool) -> u64 {
    if parallel {
        let mut program = TcParallel {
            edge: edges.iter().copied().collect(),
            ..Default::default()
        };
        program.run();
        program.path.len() as u64
    } else {
        let mut program = TcSequential {
            edge: edges.to_vec(),
            ..Default::default()
        };
        program.run();
        program.path.len() as u64
    }
}

/// Number of `sg` tuples (pairs of the same generation) of `edges`:
///
/// ```text
/// sg(x, y) :- edge(p, x), edge(p, y), x != y.
/// sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).
/// ```
///
/// The recursive rule has no `x != y`, so `sg(c, c)` holds when two nodes of one
/// generation share a child `c`. `parallel` picks `ascent_par!` over `ascent!`, as
/// for [`transitive_closure`]. Duplicate edges are allowed and count once.
pub fn same_generation(edges: &[(u32, u32)], parallel: bool) -> u64 {
    if parallel {
        let mut program = SgParallel {
            edge: edges.iter().copied().collect(),
            ..Default::default()
        };
        program.run();
        program.sg.len() as u64
    } else {
        let mut program = SgSequential {
            edge: edges.to_vec(),
            ..Default::default()
        };
        program.run();
        program.sg.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::{same_generation, transitive_closure};

    /// 0 → 1 → 2 → 3.
    const CHAIN: &[(u32, u32)] = &[(0, 1), (1, 2), (2, 3)];
    /// 0 → 1 → 2 → 0.
    const CYCLE: &[(u32, u32)] = &[(0, 1), (1, 2), (2, 0)];
    /// A complete binary tree of depth 2: 0 → {1, 2}, 1 → {3, 4}, 2 → {5, 6}.
    const TREE: &[(u32, u32)] = &[(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (2, 6)];
    /// A diamond: 0 → {1, 2}, both → 3.
    const DIAMOND: &[(u32, u32)] = &[(0, 1), (0, 2), (1, 3), (2, 3)];

    /// Both evaluations, which must agree.
    fn both(count: fn(&[(u32, u32)], bool) -> u64, edges: &[(u32, u32)]) -> u64 {
        let sequential = count(edges, false);
        assert_eq!(
            sequential,
            count(edges, true),
            "ascent! and ascent_par! disagree"
        );
        sequential
    }

    #[test]
    fn transitive_closure_of_small_graphs() {
        // A chain of n edges reaches n + (n - 1) + … + 1 pairs.
        assert_eq!(both(transitive_closure, CHAIN), 6);
        // Every node of a cycle reaches every node, itself included.
        assert_eq!(both(transitive_closure, CYCLE), 9);
        // Six edges, plus the root reaching its four grandchildren.
        assert_eq!(both(transitive_closure, TREE), 10);
        // Four edges plus 0 → 3, found along two paths but counted once.
        assert_eq!(both(transitive_closure, DIAMOND), 5);
        assert_eq!(both(transitive_closure, &[]), 0);
    }

    #[test]
    fn duplicate_edges_count_once() {
        let doubled: Vec<_> = CHAIN.iter().chain(CHAIN).copied().collect();
        assert_eq!(both(transitive_closure, &doubled), 6);
        let doubled: Vec<_> = TREE.iter().chain(TREE).copied().collect();
        assert_eq!(both(same_generation, &doubled), 14);
    }

    #[test]
    fn same_generation_of_small_graphs() {
        // No node has two children, so the base rule fires nowhere.
        assert_eq!(both(same_generation, CHAIN), 0);
        assert_eq!(both(same_generation, CYCLE), 0);
        // Siblings (1, 2), (3, 4), (5, 6) both ways: 6; cousins {3, 4} × {5, 6}
        // both ways: 8.
        assert_eq!(both(same_generation, TREE), 14);
        // (1, 2) and (2, 1), then (3, 3) from either: the recursive rule has no
        // x != y.
        assert_eq!(both(same_generation, DIAMOND), 3);
    }
}
