#!/usr/bin/env python3
"""Update latency through the viper agent against the Java SDK's own, in one run.

For each model size it measures, on this machine and one transport (ucx:// where UCX works, else
tcp://):

- Java SDK: ``viper bench transfer`` (a Java producer, a Java consumer in a second JVM): median
  latency from ``publish`` called to the consumer's swap, and the producer's stall;
- Python -> Java: this process publishes through a ``viper agent`` (producer side) to ``viper
  consume`` (a Java consumer in its own JVM);
- Python -> Python: the same producer, to a Python consumer process that follows the model through
  a second agent (consumer side) and takes a lease on each new version.

Latency is from the Python ``publish`` call to the consumer's report on a pipe, both timestamps
taken here; every staging and receive buffer is warmed up first (4 updates). The stall is what
``publish`` cost the training loop: the copy into the agent's shared memory. The three are measured
in turns, ``--rounds`` times each with ``--repeat`` updates, so that the load of a shared machine
drifts over all of them alike; medians are over every round's updates. Prints a Markdown table and
the load average before and after each size.

Usage (from the repository root; the client on PYTHONPATH, Debian's python3 with numpy)::

    PYTHONPATH=clients/python /usr/bin/python3 examples/python/bench_agent.py --sizes 16k,64m,1g --rounds 3 --repeat 3
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import viper

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
VIPER = os.path.join(ROOT, "viper")
WARMUP = 4


def parse_size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower()
    return int(float(t[:-1]) * units[t[-1]]) if t[-1] in units else int(t)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parts(model):
    """16 tensors of a model of 16 MiB or more (one below), as the Java benchmark splits it."""
    n = 16 if model.nbytes >= (16 << 20) else 1
    chunk = model.nbytes // n
    return {"layer%d.weight" % i: model[i * chunk:(model.nbytes if i == n - 1 else (i + 1) * chunk)] for i in range(n)}


def expect(proc, prefix, what):
    """The next line of ``proc``'s stdout starting with ``prefix``."""
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("%s exited (code %s) before printing %r" % (what, proc.poll(), prefix))
        if line.startswith(prefix):
            return line


def start(cmd, **kw):
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1, **kw)


def stop(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


class Samples:
    """Latencies and stalls of one path over every round (ms)."""

    def __init__(self):
        self.latencies, self.stalls = [], []

    def summary(self):
        return {"median_ms": statistics.median(self.latencies), "stall_ms": statistics.median(self.stalls), "n": len(self.latencies)}


def java_sdk(size, repeat, path, into):
    """One round of viper bench transfer; returns its memcpy (ms)."""
    out = subprocess.run([VIPER, "bench", "transfer", "--size", str(size), "--paths", path, "--no-baseline", "--repeat", str(repeat),
                          "--json"], check=True, capture_output=True, text=True).stdout
    j = json.loads(out.strip().splitlines()[-1])
    r = j["results"][0]
    into.latencies.extend(r["samples_ms"])
    into.stalls.extend([r["stall_ms"]] * len(r["samples_ms"]))  # the benchmark reports the median stall only
    return j["memcpy_ms"]


def measure(producer, consumer_proc, tensors, repeat, what, into):
    for i in range(WARMUP + repeat):
        t0 = time.perf_counter()
        published = producer.publish(tensors)
        expect(consumer_proc, "swapped %d " % published.version, what)
        elapsed = (time.perf_counter() - t0) * 1e3
        if i >= WARMUP:
            into.latencies.append(elapsed)
            into.stalls.append(published.stall_s * 1e3)
        producer.flush()


def python_consumer(model, agent):
    """The Python consumer: prints 'ready', then 'swapped <version> <path>' once each new version is leasable."""
    with viper.Consumer(model, agent=agent) as c:
        seen = c.version
        print("ready", flush=True)
        while True:
            c.wait_version(seen + 1)
            with c.current() as m:
                seen = m.version
                next(iter(m.values()), None)  # the first tensor's view: the version is readable here
                print("swapped %d python" % seen, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16k,64m,1g")
    ap.add_argument("--repeat", type=int, default=3, help="measured updates per path and round (default 3)")
    ap.add_argument("--rounds", type=int, default=3, help="turns of the three measurements per size (default 3)")
    ap.add_argument("--transport", choices=["ucx", "tcp"], help="default: ucx where UCX works, else tcp")
    ap.add_argument("--consumer", nargs=2, metavar=("MODEL", "AGENT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.consumer:
        return python_consumer(*args.consumer)

    transport = args.transport or ("ucx" if os.path.exists("/usr/include/ucp/api/ucp.h") else "tcp")
    java_path = "host" if transport == "ucx" else "tcp"
    work = tempfile.mkdtemp(prefix="viper-bench-")
    notifier = "embedded://127.0.0.1:%d" % free_port()
    budget = ["--set", "viper.producer.staging.budget.bytes=8g", "--set", "viper.consumer.host.budget.bytes=8g"]
    agents = []
    rows = []
    try:
        for name in ("producer", "consumer"):
            a = start([VIPER, "agent", "--socket", os.path.join(work, name + ".sock"), "--notifier", notifier,
                       "--set", "viper.transports=%s://127.0.0.1:0" % transport, "--set", "viper.consumer.paths=" + transport] + budget)
            expect(a, "viper agent listening", name + " agent")
            agents.append(a)
        for text in args.sizes.split(","):
            size = parse_size(text)
            load_before = os.getloadavg()[0]
            model = np.random.default_rng(42).integers(0, 256, size, dtype=np.uint8)
            tensors = parts(model)
            java, py_java, py_py, memcpy = Samples(), Samples(), Samples(), []
            with viper.Producer("bench-%s" % text, agent=os.path.join(work, "producer.sock")) as producer:
                for _ in range(args.rounds):
                    memcpy.append(java_sdk(size, args.repeat, java_path, java))
                    # Python -> Java: viper consume follows the model in its own JVM.
                    java_consumer = start([VIPER, "consume", "--model", "bench-%s" % text, "--notifier", notifier, "--paths", transport])
                    try:
                        measure(producer, _Lines(java_consumer), tensors, args.repeat, "viper consume", py_java)
                    finally:
                        stop([java_consumer])
                    # Python -> Python: a Python process follows it through the consumer-side agent.
                    py_consumer = start([sys.executable, os.path.abspath(__file__), "--consumer", "bench-%s" % text,
                                         os.path.join(work, "consumer.sock")], env=dict(os.environ))
                    try:
                        expect(py_consumer, "ready", "the Python consumer")
                        measure(producer, py_consumer, tensors, args.repeat, "the Python consumer", py_py)
                    finally:
                        stop([py_consumer])
            row = {"size": text, "bytes": size, "transport": transport, "memcpy_ms": min(memcpy), "java": java.summary(),
                   "py_java": py_java.summary(), "py_py": py_py.summary(), "load": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        stop(agents)
        shutil.rmtree(work, ignore_errors=True)
    print_table(rows)


class _Lines:
    """viper consume prints JSON; this presents its lines as 'swapped <version> <path>' for expect()."""

    def __init__(self, proc):
        self.proc = proc
        self.stdout = self

    def readline(self):
        line = self.proc.stdout.readline()
        if not line:
            return line
        j = json.loads(line)
        return "swapped %d %s\n" % (j["version"], j["path"])

    def poll(self):
        return self.proc.poll()


def print_table(rows):
    print("| size | transport | memcpy ms | Java SDK ms (stall ms) | Python -> Java ms (x Java) | Python -> Python ms (x Java) "
          "| Python stall ms | load avg |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        j = r["java"]["median_ms"]
        print("| %s | %s | %.3g | %.1f (%.1f) | %.1f (%.2f) | %.1f (%.2f) | %.3g | %.1f-%.1f |" % (
            r["size"], r["transport"], r["memcpy_ms"], j, r["java"]["stall_ms"], r["py_java"]["median_ms"],
            r["py_java"]["median_ms"] / j, r["py_py"]["median_ms"], r["py_py"]["median_ms"] / j,
            statistics.median([r["py_java"]["stall_ms"], r["py_py"]["stall_ms"]]), r["load"][0], r["load"][1]))


if __name__ == "__main__":
    main()
