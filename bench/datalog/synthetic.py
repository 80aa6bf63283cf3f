#!/usr/bin/env python3
"""A strongly connected graph for the scale runs: `synthetic.py N [DEGREE] [SEED]`.

Writes N nodes' edges as `source<TAB>target` lines to stdout: the cycle
0 -> 1 -> ... -> N-1 -> 0, and DEGREE (default 2) more out-edges per node to distinct
nodes drawn with Python's seeded generator (SEED, default 1). The cycle makes every
node reach every node, so the transitive closure has exactly N * N tuples (each
(x, x) too), whatever the random edges; the random edges keep the diameter near
log(N), so the fixpoint takes few iterations with large deltas.
"""
import random
import sys


def main() -> None:
    if not 2 <= len(sys.argv) <= 4:
        sys.exit(__doc__.strip().splitlines()[0])
    n = int(sys.argv[1])
    degree = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    if n < 2 or not 0 <= degree <= n - 2:
        sys.exit("need N >= 2 and 0 <= DEGREE <= N - 2")
    rng = random.Random(seed)
    out = sys.stdout
    for v in range(n):
        nxt = (v + 1) % n
        targets = {nxt}
        out.write(f"{v}\t{nxt}\n")
        while len(targets) < degree + 1:
            t = rng.randrange(n)
            if t not in targets:
                targets.add(t)
                out.write(f"{v}\t{t}\n")


if __name__ == "__main__":
    main()
