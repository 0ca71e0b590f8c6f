"""Differential fuzzing against libdarshan-util (pydarshan 3.5.0) on random well-formed logs.

    python -m native.fuzz.differential [n_logs] [first_seed]      (from the project root)

Uses the synthetic-log generator of tests/support/synthetic_darshan.py with random seeds over
every (format, byte order, compression, module-version) combination and checks the native tables
equal libdarshan-util's. Logs are well-formed, so pydarshan runs in-process.
"""

import random
import sys
import tempfile
import time
from pathlib import Path

from readers import native_darshan
from tests.support.synthetic_darshan import Gen, assert_same_table, combos, reference_decode


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    n = int(argv[0]) if len(argv) > 0 else 2000
    first = int(argv[1]) if len(argv) > 1 else 10_000
    every = combos()
    rng = random.Random(first)
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.darshan"
        for k in range(n):
            minor, big, comp, versions, _ = every[rng.randrange(len(every))]
            # random subset of the modules
            versions = {m: v for m, v in versions.items() if rng.random() < 0.7}
            seed = first + k
            data = Gen(seed, minor, big, comp).log(versions)
            path.write_bytes(data)
            nat, ref = native_darshan.decode(data), reference_decode(str(path))
            # AutoPerf's tables come from the native decoder only (tests/readers/test_autoperf.py)
            assert set(nat.tables) - {"apmpi", "apxc"} == set(ref.tables), (
                seed,
                minor,
                big,
                versions,
            )
            for name in ref.tables:
                assert_same_table(
                    nat.tables[name],
                    ref.tables[name],
                    f"seed={seed} 3.{minor:02d} big={big} {versions} {name}",
                )
            assert nat.modules == ref.modules and nat.partial_modules == ref.partial_modules, seed
            assert nat.modules_info == ref.modules_info, seed
    print(
        f"differential: {n} random logs equal to libdarshan-util in {time.perf_counter() - t:.1f} s"
    )


if __name__ == "__main__":
    main()
