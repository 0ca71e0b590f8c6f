"""Differential fuzzing against libdarshan-util (pydarshan 3.5.0) on random well-formed logs.

    .venv/bin/python native/fuzz/differential.py [n_logs] [first_seed]

Uses the synthetic-log generator of tests/readers/test_native_darshan_synthetic.py with random
seeds over every (format, byte order, compression, module-version) combination and checks the
native tables equal libdarshan-util's. Logs are well-formed, so pydarshan runs in-process.
"""
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from readers import native_darshan  # noqa: E402
from tests.readers.test_native_darshan_synthetic import Gen, _combos, _reference, _same  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    combos = _combos()
    rng = random.Random(first)
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.darshan"
        for k in range(n):
            minor, big, comp, versions, _ = combos[rng.randrange(len(combos))]
            # random subset of the modules
            versions = {m: v for m, v in versions.items() if rng.random() < 0.7}
            seed = first + k
            data = Gen(seed, minor, big, comp).log(versions)
            path.write_bytes(data)
            nat, ref = native_darshan.decode(data), _reference(str(path))
            assert set(nat.tables) == set(ref.tables), (seed, minor, big, versions)
            for name in ref.tables:
                _same(nat.tables[name], ref.tables[name], f"seed={seed} 3.{minor:02d} big={big} {versions} {name}")
            assert nat.modules == ref.modules and nat.partial_modules == ref.partial_modules, seed
    print(f"differential: {n} random logs equal to libdarshan-util in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
