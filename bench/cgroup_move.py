#!/usr/bin/env python3
"""How long moving one process into its cgroups takes on this host: a sleeping process is moved back and forth
between two cgroups of isb's own in each v1 hierarchy a sandbox joins (cpu, cpuacct, memory, pids), or once in the
unified hierarchy on cgroup v2. Prints the median and p90 of RUNS moves (default 100) of all hierarchies together.
Needs root. Removes its process and cgroups. Usage: python3 bench/cgroup_move.py [RUNS]"""
import os
import statistics
import subprocess
import sys
import time

ROOT = "/sys/fs/cgroup"
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
if os.path.exists(f"{ROOT}/cgroup.controllers"):
    hierarchies = [ROOT]  # v2
else:
    hierarchies = [f"{ROOT}/{c}" for c in ("cpu", "cpuacct", "memory", "pids") if os.path.isdir(f"{ROOT}/{c}")]
made = []
proc = subprocess.Popen(["sleep", "300"])
try:
    for h in hierarchies:
        for side in ("a", "b"):
            os.mkdir(f"{h}/isb-bench-move-{side}")
            made.append(f"{h}/isb-bench-move-{side}")
    times = []
    for i in range(runs):
        side = "a" if i % 2 == 0 else "b"
        start = time.perf_counter()
        for h in hierarchies:
            with open(f"{h}/isb-bench-move-{side}/cgroup.procs", "w") as f:
                f.write(str(proc.pid))
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print(f"== moving a process into {len(hierarchies)} cgroup hierarchies ({', '.join(os.path.basename(h) for h in hierarchies)}), "
          f"{runs} moves: median {statistics.median(times):.3f} ms, p90 {times[int(runs * 0.9) - 1]:.3f} ms")
finally:
    proc.kill()
    proc.wait()
    for d in reversed(made):
        os.rmdir(d)
