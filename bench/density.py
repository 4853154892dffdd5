#!/usr/bin/env python3
"""Host memory per idle sandbox, and where it goes (bench/density.sh runs this as root; see bench/README.md).

Every figure is a difference of host readings taken after `sync; echo 3 > /proc/sys/vm/drop_caches`, each reading
the median of SAMPLES reads of /proc/meminfo. A round reads the host, creates N sandboxes, reads it again, removes
them and reads it a third time; the round's figure is the middle reading against the mean of the outer two, so a
steady drift of the host's own use (other work on a shared machine) cancels. The per-sandbox figure is the median
over ROUNDS rounds, divided by N, after a warm-up round that is not counted. The total is MemAvailable with the
anonymous memory and page tables of every process but the run's own added back (reading()); beside it, what the
memory cgroups were charged, which other work on the host does not move. The parts (the writable layers alone,
network namespaces alone, cgroups alone) are measured the same way with nothing else made, from a memory cgroup of
the run's own.
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

KIB = 1024
MIB = 1024 * 1024
N = int(os.environ.get("N", "60"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SAMPLES = int(os.environ.get("SAMPLES", "5"))
SETTLE = float(os.environ.get("SETTLE", "3"))
# Sandboxes with egress open too: a daemon that finds IPv4 forwarding off turns it on for them, and then keeps its
# nftables table (whose drop stops the host routing for anyone else) after it stops, by design. Off by default.
EGRESS_OPEN = os.environ.get("EGRESS_OPEN", "0") == "1"
TAG = "isbdens%d" % os.getpid()
TABLE = "isbd%d" % (os.getpid() % 100000)  # the daemon's nftables table, and its veths' prefix: short
MEMINFO_KEYS = ["MemAvailable", "Slab", "SUnreclaim", "KernelStack", "PageTables", "Percpu", "VmallocUsed",
                "Shmem", "AnonPages"]
# Slab caches by what makes them; a cache shared with the host's other work moves with it too.
SLAB_GROUPS = [
    ("ext4, loop, block", re.compile(r"^(ext4|jbd2|mbcache|bdev_cache|request_queue|blkdev|bio|biovec|buffer_head)")),
    ("network", re.compile(r"^(net_namespace|proc_dir_entry|RAW|UDP|TCP|PING|sock_inode|ip_fib|fib6|ip6|ip4|"
                           r"inet|nf_|xfrm|skbuff|uts_namespace|netns|dst)")),
    ("kernfs (sysfs, cgroup files)", re.compile(r"^kernfs")),
    ("mounts, inodes, dentries", re.compile(r"^(mnt_cache|shmem_inode|inode_cache|dentry|proc_inode|"
                                            r"debugfs_inode|mqueue_inode|sysfs|devpts)")),
    ("tasks", re.compile(r"^(task_struct|signal_cache|sighand_cache|mm_struct|vm_area_struct|files_cache|"
                         r"fs_cache|cred_jar|pid|anon_vma|seccomp|nsproxy|user_namespace|pid_namespace)")),
]


def log(msg):
    print(msg, flush=True)


def die(msg):
    print("density: " + msg, file=sys.stderr, flush=True)
    raise SystemExit(1)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


# ---------------------------------------------------------------------------------------------------- host readings

def drop_caches():
    os.sync()
    write("/proc/sys/vm/drop_caches", "3")
    time.sleep(1)


def meminfo():
    out = {}
    for line in read("/proc/meminfo").splitlines():
        key, value = line.split(":", 1)
        out[key] = int(value.split()[0]) * KIB
    return out


def slab_bytes():
    out = {}
    for line in read("/proc/slabinfo").splitlines()[2:]:
        f = line.split()
        out[f[0]] = int(f[14]) * int(f[5]) * 4096  # slabs * pages per slab
    return out


class Cgroups:
    """Where the memory controller is (v1 or v2), and a group of this run's own for the daemon."""

    def __init__(self):
        self.v1 = os.path.exists("/sys/fs/cgroup/memory/memory.usage_in_bytes")
        self.memory_root = "/sys/fs/cgroup/memory" if self.v1 else "/sys/fs/cgroup"
        self.usage_file = "memory.usage_in_bytes" if self.v1 else "memory.current"
        self.daemon = os.path.join(self.memory_root, TAG)

    def usage(self, path):
        text = read(os.path.join(path, self.usage_file)).strip()
        return int(text) if text else 0

    def anon(self, path):
        """Anonymous memory of the group and those below it (the heaps, stacks and tmpfs-free part of its processes)."""
        key = "total_rss" if self.v1 else "anon"
        for line in read(os.path.join(path, "memory.stat")).splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
        return 0

    def go_home(self, proc_cgroup):
        """Moves this process back to its memory cgroup as /proc/self/cgroup read `proc_cgroup`."""
        for line in proc_cgroup.splitlines():
            _, controllers, path = line.split(":", 2)
            if (self.v1 and "memory" in controllers.split(",")) or (not self.v1 and controllers == ""):
                write(os.path.join(self.memory_root, path.lstrip("/"), "cgroup.procs"), str(os.getpid()))
                return

    def sandbox(self, sandbox_id):
        return os.path.join(self.memory_root, "isb", sandbox_id)

    def hierarchies(self):
        """The hierarchies a sandbox gets a group in (cgroup.cc): memory, pids, cpu (and cpuacct) on v1."""
        if not self.v1:
            return ["/sys/fs/cgroup"]
        return sorted({os.path.realpath("/sys/fs/cgroup/" + c) for c in ("memory", "pids", "cpu", "cpuacct")})


def image_cache(images):
    """Bytes of the host's page cache that hold the writable layers' images (their data as the loop device read or
    wrote it through the host's filesystem)."""
    if not images:
        return 0
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES"] + images,
                         capture_output=True, text=True).stdout
    return sum(int(x) for x in out.split())


def reading(cg, daemon_pid=None, sandbox_ids=(), images=()):
    """One reading of the host: medians of SAMPLES reads, after the caches are dropped. "Available" is MemAvailable
    with the anonymous memory and page tables of every process but this run's added back: on a shared host the
    heaps of other work come and go by hundreds of MiB within seconds, which would bury the figure; what this run's
    own processes hold (the daemon's group, the sandboxes' groups) stays in it."""
    cached = image_cache(images)
    own_pids = [int(p) for g in ([cg.daemon] if daemon_pid else []) + [cg.sandbox(i) for i in sandbox_ids]
                for p in read(os.path.join(g, "cgroup.procs")).split()]
    drop_caches()
    samples = []
    for _ in range(SAMPLES):
        m = meminfo()
        ours = cg.anon(cg.daemon) if daemon_pid else 0
        ours += sum(cg.anon(cg.sandbox(i)) for i in sandbox_ids)
        ours_pte = sum(rollup(p).get("VmPTE", 0) for p in own_pids)
        m["Available"] = m["MemAvailable"] + m["AnonPages"] - ours + m["PageTables"] - ours_pte
        samples.append(m)
        time.sleep(0.2)
    r = {k: statistics.median(s[k] for s in samples) for k in MEMINFO_KEYS + ["Available"]}
    slabs = slab_bytes()
    for name, pattern in SLAB_GROUPS:
        r["slab: " + name] = sum(v for k, v in slabs.items() if pattern.match(k))
    grouped = sum(r["slab: " + name] for name, _ in SLAB_GROUPS)
    r["slab: everything else (kmalloc-*, ...)"] = sum(slabs.values()) - grouped
    r["image cache"] = cached
    r["own cgroup"] = cg.usage(cg.daemon)
    if daemon_pid:
        r["daemon anon"] = rollup(daemon_pid).get("Pss_Anon", 0)
    return r


def rollup(pid):
    out = {}
    for line in read("/proc/%d/smaps_rollup" % pid).splitlines()[1:]:
        key, value = line.split(":", 1)
        out[key] = int(value.split()[0]) * KIB
    for line in read("/proc/%d/status" % pid).splitlines():
        if line.startswith("VmPTE:"):
            out["VmPTE"] = int(line.split()[1]) * KIB
    return out


def per_item(before, during, after, n):
    """The middle reading against the mean of the outer two, per item (positive: memory the items use)."""
    out = {}
    for k in during:
        mid = (before[k] + after[k]) / 2
        used = mid - during[k] if k in ("MemAvailable", "Available") else during[k] - mid
        out[k] = used / n
    return out


def median_rounds(rounds):
    out = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    out["Available rounds"] = sorted(r["Available"] for r in rounds)
    return out


# ------------------------------------------------------------------------------------------------------- the daemon

class UnixHttp(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("isb", timeout=300)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


class Daemon:
    def __init__(self, isb, cg, state, pools=True):
        self.cg, self.state = cg, state
        self.sock = os.path.join(state, "api", "isb.sock")
        self.pooled = []
        self.log_path = state + ".log"
        log_file = open(self.log_path, "w")
        # Its own memory cgroup (which the spawner, forked from it, shares): what the daemon allocates for the
        # sandboxes, in user space and in the kernel, is read from there.
        self.proc = subprocess.Popen(
            [isb, "serve", "--state-dir", state, "--listen", "127.0.0.1:0", "--egress-table", TABLE,
             "--sandbox-subnet", "198.19.252.0/22"] + ([] if pools else ["--pool-size", "0", "--net-pool-size", "0"]),
            stdout=log_file, stderr=log_file,
            preexec_fn=lambda: write(os.path.join(cg.daemon, "cgroup.procs"), str(os.getpid())))
        for _ in range(400):
            if "listening on" in read(self.log_path):
                break
            if self.proc.poll() is not None:
                die("isb serve exited during start-up:\n" + read(self.log_path))
            time.sleep(0.05)
        else:
            die("isb serve did not start within 20 s:\n" + read(self.log_path))

    def call(self, tool, args):
        conn = UnixHttp(self.sock)
        conn.request("POST", "/api/v1/tools/" + tool, json.dumps(args), {"Content-Type": "application/json"})
        body = json.loads(conn.getresponse().read() or b"{}")
        conn.close()
        if "result" not in body:
            raise RuntimeError("%s %s: %s" % (tool, json.dumps(args), body))
        return body["result"]

    def create(self, name, egress="none"):
        return self.call("sandbox_create", {"name": name, "egress": egress})["id"]

    def remove(self, sandbox_id):
        self.call("sandbox_remove", {"sandbox": sandbox_id})

    def sandbox_dirs(self):
        return set(os.listdir(os.path.join(self.state, "sandboxes")))

    def wait_pool(self, size=2, timeout=60):
        """Until `size` sandboxes the database does not know (the pool) are launched and running."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            listed = {s["id"] for s in self.call("sandbox_list", {}).get("sandboxes", [])}
            pooled = [d for d in self.sandbox_dirs() - listed if init_pid(self.cg, d)]
            if len(pooled) >= size:
                return pooled
            time.sleep(0.5)
        die("the pool did not fill within %d s" % timeout)

    def pids(self):
        return [int(p) for p in read(os.path.join(self.cg.daemon, "cgroup.procs")).split()]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def init_pid(cg, sandbox_id):
    for pid in read(os.path.join(cg.sandbox(sandbox_id), "cgroup.procs")).split():
        if read("/proc/%s/comm" % pid).strip() == "isb-init":
            return int(pid)
    return 0


# ------------------------------------------------------------------------------------------------ what is measured

def sandbox_rounds(daemon, cg, egress, rounds, label=""):
    """Per sandbox: host readings, and what each sandbox's init and memory cgroup hold, over `rounds` rounds."""
    results = []
    for r in range(rounds):
        before = reading(cg, daemon.proc.pid, daemon.pooled)
        ids = [daemon.create("%s-%s-%d-%d" % (TAG, egress, r, i), egress) for i in range(N)]
        time.sleep(SETTLE)
        images = [os.path.join(daemon.state, "sandboxes", i, "layer.img") for i in ids]
        during = reading(cg, daemon.proc.pid, daemon.pooled + ids, images)
        inits = [rollup(init_pid(cg, i)) for i in ids]
        during_own = {
            "init Pss": sum(x.get("Pss", 0) for x in inits),
            "init Private": sum(x.get("Private_Dirty", 0) + x.get("Private_Clean", 0) for x in inits),
            "init page tables": sum(x.get("VmPTE", 0) for x in inits),
            "sandbox cgroups": sum(cg.usage(cg.sandbox(i)) for i in ids),
        }
        for i in ids:
            daemon.remove(i)
        time.sleep(SETTLE)
        after = reading(cg, daemon.proc.pid, daemon.pooled)
        row = per_item(before, during, after, N)
        row.update({k: v / N for k, v in during_own.items()})
        results.append(row)
        log("   %s (egress %s): %.2f MiB per sandbox (MemAvailable alone: %.2f)" % (
            label or "round %d" % (r + 1), egress, row["Available"] / MIB, row["MemAvailable"] / MIB))
    return median_rounds(results)


def held(cg, make, release, rounds, images=lambda token: []):
    """Per item: host readings with N items held by `make` (undone by `release`), over `rounds` rounds."""
    results = []
    home = read("/proc/self/cgroup")
    # Made from this run's own memory cgroup: what the kernel charges for them (most of what it allocates for a
    # mount, a namespace or a cgroup) is read there exactly, whatever else the host does meanwhile.
    write(os.path.join(cg.daemon, "cgroup.procs"), str(os.getpid()))
    try:
        for _ in range(rounds):
            before = reading(cg)
            token = make()
            try:
                during = reading(cg, images=images(token))
            finally:
                release(token)
            after = reading(cg)
            results.append(per_item(before, during, after, N))
    finally:
        cg.go_home(home)
    return median_rounds(results)


def layers_alone(build, cg, workdir, rounds):
    def make():
        d = tempfile.mkdtemp(prefix="layers-", dir=workdir)
        p = subprocess.Popen([os.path.join(build, "layer_hold"), d, str(N)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        if not p.stdout.readline().startswith("attached"):
            p.stdin.close()
            p.wait()
            die("layer_hold could not attach %d layers" % N)
        return p, d

    def release(token):
        p, d = token
        p.stdin.close()
        if p.wait() != 0:
            die("layer_hold could not remove its layers")
        shutil.rmtree(d)

    def layer_images(token):
        return [os.path.join(token[1], "l%d.img" % i) for i in range(N)]

    return held(cg, make, release, rounds, layer_images)


def netns_alone(cg, rounds):
    def make():
        names = ["%s-%d" % (TAG, i) for i in range(N)]
        for n in names:
            subprocess.run(["ip", "netns", "add", n], check=True)
            subprocess.run(["ip", "-n", n, "link", "set", "lo", "up"], check=True)
        return names

    def release(names):
        for n in names:
            subprocess.run(["ip", "netns", "del", n], check=True)

    return held(cg, make, release, rounds)


def cgroups_alone(cg, rounds):
    def make():
        made = []
        for h in cg.hierarchies():
            parent = os.path.join(h, TAG + "-cg")
            os.makedirs(parent, exist_ok=True)
            made.append(parent)
            if not cg.v1:
                write(os.path.join(parent, "cgroup.subtree_control"), "+memory +pids +cpu")
            for i in range(N):
                os.mkdir(os.path.join(parent, str(i)))
        return made

    def release(made):
        for parent in made:
            for i in range(N):
                os.rmdir(os.path.join(parent, str(i)))
            os.rmdir(parent)

    return held(cg, make, release, rounds)


# ---------------------------------------------------------------------------------------------------------- report

def mib(v):
    return "%7.2f" % (v / MIB)


def kib(v):
    return "%8.0f" % (v / KIB)


def leftovers(cg, workdir, sandbox_names):
    """What this run could have left on the host."""
    found = []
    for dev in os.listdir("/sys/block"):
        backing = read("/sys/block/%s/loop/backing_file" % dev).strip()
        if backing.startswith(workdir) or TAG in backing:
            found.append("loop device %s on %s" % (dev, backing))
    for line in read("/proc/self/mountinfo").splitlines():
        if workdir in line or TAG in line:
            found.append("mount " + line.split()[4])
    for h in cg.hierarchies() + [cg.memory_root]:
        for name in os.listdir(h):
            if name.startswith(TAG):
                found.append("cgroup " + os.path.join(h, name))
        isb_dir = os.path.join(h, "isb")
        if os.path.isdir(isb_dir):
            for sid in sandbox_names:
                if os.path.isdir(os.path.join(isb_dir, sid)):
                    found.append("cgroup " + os.path.join(isb_dir, sid))
    tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout.split() \
        if shutil.which("nft") else []
    if TABLE in tables and not EGRESS_OPEN:
        found.append("nftables table inet " + TABLE)
    if os.path.isdir("/run/netns"):
        found += ["netns " + n for n in os.listdir("/run/netns") if n.startswith(TAG)]
    if os.path.exists(workdir):
        found.append("dir " + workdir)
    return found


def main():
    if os.geteuid() != 0:
        die("run as root (it makes sandboxes, loop devices, cgroups and network namespaces)")
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    isb = os.path.join(build, "isb")
    for tool in (isb, os.path.join(build, "layer_hold")):
        if not os.access(tool, os.X_OK):
            die("%s is missing: build it first (ninja -C %s isb layer_hold)" % (tool, build))
    cg = Cgroups()
    workdir = tempfile.mkdtemp(prefix="isb-density-")
    os.chmod(workdir, 0o711)
    state = os.path.join(workdir, "state")
    os.mkdir(state, 0o711)
    daemon = None
    seen = set()
    try:
        log("== host memory per idle sandbox (%d cores, %d MiB, %s, %s)" % (
            os.cpu_count(), meminfo()["MemTotal"] // MIB, os.uname().release, time.strftime("%F", time.gmtime())))
        log("   command: bench/density.sh %s  (N=%d sandboxes, ROUNDS=%d, SAMPLES=%d)" % (build, N, ROUNDS, SAMPLES))
        os.makedirs(cg.daemon, exist_ok=True)
        no_daemon = reading(cg)
        daemon = Daemon(isb, cg, state)
        pooled = daemon.wait_pool()
        seen.update(pooled)
        time.sleep(SETTLE)
        daemon.pooled = pooled
        with_pool = reading(cg, daemon.proc.pid, pooled)
        own = [rollup(p) for p in daemon.pids()]
        threads = sum(int(re.search(r"Threads:\s+(\d+)", read("/proc/%d/status" % p)).group(1)) for p in daemon.pids())
        pool_inits = [rollup(init_pid(cg, i)) for i in pooled]
        pool_cgroups = sum(cg.usage(cg.sandbox(i)) for i in pooled)

        # The pools serve named creates too: the sandboxes measured come from a daemon without pools, so every one
        # is launched for its create (a cold create) and no pool is in the figure.
        daemon.stop()
        daemon = Daemon(isb, cg, state, pools=False)
        log("-- %d named sandboxes (the default spec but a name), from a daemon with --pool-size 0 "
            "--net-pool-size 0" % N)
        # The daemon's first creates grow its heap and its threads' arenas and stacks, once: a round not counted.
        sandbox_rounds(daemon, cg, "none", 1, "warm-up, not counted")
        box = sandbox_rounds(daemon, cg, "none", ROUNDS)
        seen.update(daemon.sandbox_dirs())
        box_open = None
        if EGRESS_OPEN:
            log("-- %d sandboxes with egress open (a veth and nftables rules more), 1 round" % N)
            try:
                box_open = sandbox_rounds(daemon, cg, "open", 1)
            except RuntimeError as e:
                log("   skipped: " + str(e)[:200])
        seen.update(daemon.sandbox_dirs())
        daemon_running = reading(cg, daemon.proc.pid, daemon.pooled)
        daemon.stop()
        daemon_stopped = reading(cg)
        log("-- the parts alone: %d writable layers (layer_hold), %d network namespaces (ip netns add, lo up), "
            "%d cgroups in each hierarchy" % (N, N, N))
        layer = layers_alone(build, cg, workdir, ROUNDS)
        netns = netns_alone(cg, ROUNDS)
        groups = cgroups_alone(cg, ROUNDS)
    finally:
        if daemon:
            try:
                for s in daemon.call("sandbox_list", {}).get("sandboxes", []):
                    daemon.remove(s["id"])
            except Exception:  # noqa: BLE001 - the daemon may be gone already
                pass
            daemon.stop()
        for p in (os.path.join(cg.memory_root, TAG),):
            if os.path.isdir(p):
                os.rmdir(p)
        log_path = state + ".log"
        shutil.rmtree(workdir, ignore_errors=True)
        if os.path.exists(log_path):
            os.unlink(log_path)

    def row(what, how, v, unit=kib):
        print("  %-46s %-58s %s" % (what, how, unit(v)))

    def head(what, unit):
        print("\n  %-46s %-58s %8s" % (what, "measured as", unit))

    head("per idle sandbox (median of %d rounds of %d: %s KiB)" % (
        ROUNDS, N, ", ".join("%.0f" % (v / KIB) for v in box["Available rounds"])), "KiB")
    row("TOTAL: host memory available", "MemAvailable drop + others' anon, page tables", box["Available"])
    row("  the same from MemAvailable alone", "MemAvailable drop (noisy on a shared host)", box["MemAvailable"])
    row("  charged to memory cgroups", "daemon's group + the sandbox's isb/<id>",
        box["own cgroup"] + box["sandbox cgroups"])
    row("    the daemon's (daemon, spawner, the mount)", "usage of the daemon's own group", box["own cgroup"])
    row("      of it the daemon's heap", "Pss_Anon of isb serve", box["daemon anon"])
    row("    (d) the sandbox's own memory cgroup", "usage of isb/<id> (init, its mounts, tmpfs)", box["sandbox cgroups"])
    row("  kernel: slab", "Slab in /proc/meminfo", box["Slab"])
    for name, _ in SLAB_GROUPS + [("everything else (kmalloc-*, ...)", None)]:
        row("    " + name, "/proc/slabinfo caches", box["slab: " + name])
    row("  kernel: task stacks", "KernelStack", box["KernelStack"])
    row("  kernel: page tables", "PageTables", box["PageTables"])
    row("  kernel: per-cpu", "Percpu", box["Percpu"])
    row("  kernel: vmalloc", "VmallocUsed", box["VmallocUsed"])
    row("  tmpfs", "Shmem", box["Shmem"])
    row("  (c) init", "Pss, smaps_rollup of each sandbox's init", box["init Pss"])
    row("      its private pages", "Private_Clean + Private_Dirty", box["init Private"])
    row("      its page tables", "VmPTE (within PageTables above)", box["init page tables"])
    row("  (a) page cache of its layer image", "fincore of layer.img, before the caches are dropped", box["image cache"])

    groups_how = "N x mkdir in %d hierarch%s" % (len(cg.hierarchies()), "y" if len(cg.hierarchies()) == 1 else "ies")
    head("the parts alone, per item (median of %d rounds of %d)" % (ROUNDS, N), "KiB")
    for what, how, part in (("(a) writable layer: ext4 on a loop device", "layer_hold (DiskLayer::Attach)", layer),
                            ("(b) network namespace, lo up", "ip netns add", netns),
                            ("(d) empty cgroups, one per hierarchy", groups_how, groups)):
        row("  " + what, "available drop, " + how, part["Available"])
        row("    charged to a memory cgroup", "usage of the group it was made from", part["own cgroup"])
        row("    slab", "Slab", part["Slab"])
        if part is layer:
            row("    page cache of the image", "fincore of the image, before the caches are dropped", part["image cache"])
    if box_open:
        row("  (b) egress open: veth, nftables rules, slot", "available drop, open sandbox less a none one",
            box_open["Available"] - box["Available"])

    pool_size = len(pooled)
    head("the daemon and (e) its pool", "MiB")
    row("daemon started, pool of %d full" % pool_size, "available drop from before its start",
        no_daemon["Available"] - with_pool["Available"], mib)
    row("  the daemon's own processes", "Pss of isb serve and isb-spawner (%d threads)" % threads,
        sum(x.get("Pss", 0) for x in own), mib)
    row("  (e) the pool's inits and cgroups", "init Pss + isb/<id> usage of the pooled",
        sum(x.get("Pss", 0) for x in pool_inits) + pool_cgroups, mib)
    row("  (e) the pool at the per-sandbox TOTAL", "%d x TOTAL above (derived)" % pool_size, pool_size * box["Available"],
        mib)
    row("stopping the daemon (pool of %d) frees" % pool_size, "available gain from just before its stop",
        daemon_stopped["Available"] - daemon_running["Available"], mib)
    print()
    if box["Available"] > 0:
        print("  %.2f MiB per idle sandbox: about %d on this host's %d MiB" % (
            box["Available"] / MIB, meminfo()["MemTotal"] / box["Available"], meminfo()["MemTotal"] // MIB))
    else:
        print("  per idle sandbox: below what this host's noise lets MemAvailable show; see the charged figure")
    left = leftovers(cg, workdir, seen)
    if left:
        die("left behind:\n  " + "\n  ".join(left))
    print("  left behind: nothing (no loop device, mount, cgroup, netns, nftables table or dir of this run)")


if __name__ == "__main__":
    main()
