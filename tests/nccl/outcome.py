"""What the NCCL check scripts (tests/nccl/check_*.py) share: failed checks
gathered rather than stopping at the first, scratch folders removed after
a pass and kept, named, after a failure, and whether the run is emulated
(CT_EMULATED: qemu-user runs the aarch64 build several times slower, and a
script widens its timing tolerances then, each argued where it is used).

usage (from a check script in this folder):
    from outcome import EMULATED, check, finish, near, scratch, scratch_dir
"""
import os
import shutil
import sys
import tempfile

EMULATED = bool(os.environ.get("CT_EMULATED"))
failures = []
scratch = []


def check(what, ok, detail=""):
    """Records a failure unless ok; returns ok."""
    if not ok:
        failures.append(f"{what}: {str(detail)[:600]}")
    return ok


def near(what, got, want, rel, abs_tol=0.0):
    """got within rel of want (a fraction of |want|) plus abs_tol."""
    return check(what, got is not None and abs(got - want) <= abs(want) * rel + abs_tol,
                 f"got {got}, want {want} +- {rel * 100:.1f} % + {abs_tol}")


def scratch_dir(prefix):
    """A new folder, removed at a passing finish()."""
    d = tempfile.mkdtemp(prefix=prefix)
    scratch.append(d)
    return d


def finish(ok_line="ok"):
    """Exits 1 naming the failures (the first 40) and the kept folders, or
    removes the folders and prints ok_line."""
    if failures:
        print("\n".join(failures[:40]))
        print("kept for inspection: " + " ".join(scratch))
        sys.exit(1)
    for d in scratch:
        shutil.rmtree(d, ignore_errors=True)
    print(ok_line)
