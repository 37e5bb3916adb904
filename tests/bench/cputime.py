#!/usr/bin/env python3
"""Runs a command RUNS times and prints "wall cpu user sys rss_kb": the
median wall seconds, the median CPU seconds (user + system, exact from
getrusage, not the 10 ms steps of /usr/bin/time), their user and system
parts in the run of median CPU, and the largest peak RSS.

usage: cputime.py RUNS COMMAND [ARG...]   (the command's stdout is dropped)
"""
import resource
import statistics
import subprocess
import sys
import time


def main():
    runs, cmd = int(sys.argv[1]), sys.argv[2:]
    got = []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        wall = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        user, sys_ = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
        got.append((user + sys_, wall, user, sys_, r1.ru_maxrss))
    got.sort()
    mid = got[len(got) // 2]
    wall = statistics.median(g[1] for g in got)
    print(f"{wall:.4f} {mid[0]:.4f} {mid[2]:.4f} {mid[3]:.4f} {max(g[4] for g in got)}")


if __name__ == "__main__":
    main()
