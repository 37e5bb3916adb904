#!/usr/bin/env python3
"""SIGKILL at random moments loses nothing recorded (tests/labelled/w_kill.c).

Twenty runs of w_kill under `cutrace run` on the simulated device, with 1,
2, 4 and 8 threads in turn, each SIGKILLed a random 50..600 ms after every
thread made its first step (the shim's writer flushes every 100 ms by
default, so the last tens of ms of records are in the rings alone then).
Every thread's step k marks "kill t:k" with NVTX and only then writes the
line "t:k" to a side file: after the kill, every line of the side file must
be a mark of the trace `cutrace run` salvaged, and every mark must be there
once (a frame the writer was writing at the kill is counted once). `cutrace
run` exits 137 and says it salvaged the trace; `info` says the process was
killed by SIGKILL; no mapping is left.

usage: check_kill.py [RUNS]   (environment: CT_CUTRACE, CT_W_KILL,
                               CT_FAKEGPU_DIR, CT_FAKE_CUPTI)
The random moments come from a seed printed first (CT_KILL_SEED=N repeats
a sequence).
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

failures = []


def check(what, ok, detail=""):
    if not ok:
        failures.append(f"{what}: {detail}")
    return ok


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    cutrace, w_kill = os.environ["CT_CUTRACE"], os.environ["CT_W_KILL"]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.environ["CT_FAKEGPU_DIR"]
    env["CUTRACE_CUPTI_LIB"] = os.environ["CT_FAKE_CUPTI"]
    seed = int(os.environ.get("CT_KILL_SEED", time.time_ns() % 1000000))
    print(f"seed {seed}")
    rnd = random.Random(seed)
    total_lines = total_recovered = 0
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(runs):
            threads = [1, 2, 4, 8][run % 4]
            d = os.path.join(tmp, f"run{run}")
            os.mkdir(d)
            side, pidf, traces = (os.path.join(d, n) for n in ("side", "pid", "traces"))
            p = subprocess.Popen([cutrace, "run", "-o", traces, "--", w_kill, str(threads),
                                  side, pidf], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            deadline = time.time() + 30
            while not os.path.exists(pidf) or os.path.getsize(pidf) == 0:
                if time.time() > deadline or p.poll() is not None:
                    break
                time.sleep(0.002)
            if not check(f"run {run}", os.path.exists(pidf), "w_kill did not start"):
                p.kill()
                p.wait()
                continue
            with open(pidf) as f:
                pid = int(f.read())
            wait = rnd.uniform(0.05, 0.6)
            time.sleep(wait)
            os.kill(pid, signal.SIGKILL)
            _, err = p.communicate(timeout=120)
            where = f"run {run} ({threads} threads, killed after {wait * 1000:.0f} ms)"
            check(where, p.returncode == 128 + signal.SIGKILL,
                  f"cutrace run exited {p.returncode}")
            check(where, "salvaged from its live mapping" in err, f"cutrace run said: {err}")
            with open(side) as f:
                lines = [l for l in f.read().split("\n") if l]
            dump = subprocess.run([cutrace, "dump", "--json", traces], capture_output=True,
                                  text=True)
            check(where, dump.returncode == 0, dump.stderr)
            marks = {}
            for line in dump.stdout.splitlines():
                r = json.loads(line)
                if r.get("kind") == "nvtx" and r.get("type") == "mark" and \
                        r.get("message", "").startswith("kill "):
                    m = r["message"][5:]
                    marks[m] = marks.get(m, 0) + 1
            missing = [l for l in lines if l not in marks]
            check(where, not missing,
                  f"{len(missing)} of {len(lines)} side-file steps not in the trace, "
                  f"first {missing[:3]}")
            twice = [m for m, n in marks.items() if n != 1]
            check(where, not twice, f"marks recorded more than once: {twice[:3]}")
            info = subprocess.run([cutrace, "info", traces], capture_output=True, text=True)
            check(where, "killed by SIGKILL" in info.stdout and "salvage:" in info.stdout,
                  info.stdout)
            for l in info.stdout.splitlines():
                if "records recovered from its live mapping" in l:
                    total_recovered += int(l.split()[1])
            st = os.stat(traces)
            shm = os.environ.get("CUTRACE_TEST_SHM_DIR") or "/dev/shm"
            mine = f"-{st.st_dev:x}-{st.st_ino:x}-"
            left = [n for n in os.listdir(traces) if n.endswith("-live")] + \
                   [n for n in os.listdir(shm) if n.startswith("cutrace-") and mine in n]
            check(where, not left, f"mappings left: {left}")
            total_lines += len(lines)
            print(f"{where}: {len(lines)} steps in the side file, all in the trace")
    print(f"{runs} runs, {total_lines} steps, {total_recovered} records recovered from mappings")
    check("recovery", total_recovered > 0, "no run needed its mapping: the test shows nothing")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
