"""The Dask cluster's part of `make bench` (issue 11): `nbtext train --scheduler` against
`-j 1`, on 20news x1 and x8, on clusters of one and of two worker processes started here.

    .venv/bin/python bench/cluster.py [--reps N]     # this part alone

Reported: the cluster's start-up (on its own line: a scheduler and its workers until all
have registered), train times interleaved with -j 1, CPU seconds over every process (the
client, the scheduler and the workers), the speed-up from one worker to two on x8, and the
bytes a partition's partial counts take when pickled, per document (what the workers ship
to each other and to the client).
"""

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import BIN, DATA, NBTEXT, WORK, ratio, replicated, summary

DASK = str(BIN / "dask")


class Cluster:
    """A scheduler and `workers` single-threaded worker processes, as a real cluster runs
    (each its own process); closed with the `with` block."""

    def __init__(self, workers):
        self.workers = workers

    def __enter__(self):
        import psutil
        from distributed import Client

        self.folder = tempfile.mkdtemp(prefix="nbtext-cluster-")
        scheduler_file = os.path.join(self.folder, "scheduler.json")
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        started = time.perf_counter()
        self.processes = [
            subprocess.Popen(
                [DASK, "scheduler", "--port", "0", "--dashboard-address", ":0", "--scheduler-file", scheduler_file],
                **quiet,
            )
        ]
        while not os.path.exists(scheduler_file):
            time.sleep(0.05)
        for _ in range(self.workers):  # one process each (and its nanny): the bench counts every process's CPU
            self.processes.append(
                subprocess.Popen(
                    [
                        DASK,
                        "worker",
                        "--scheduler-file",
                        scheduler_file,
                        "--nthreads",
                        "1",
                        "--dashboard-address",
                        ":0",
                    ],
                    **quiet,
                )
            )
        self.client = Client(scheduler_file=scheduler_file, set_as_default=False)
        self.client.wait_for_workers(self.workers, timeout=120)
        self.startup = time.perf_counter() - started
        self.address = self.client.scheduler.address
        self.psutil = [psutil.Process(p.pid) for p in self.processes]
        return self

    def cpu_seconds(self):
        """CPU seconds so far of the scheduler and every worker process."""
        total = 0.0
        for process in self.psutil:
            for p in [process, *process.children(recursive=True)]:
                times = p.cpu_times()
                total += times.user + times.system
        return total

    def __exit__(self, *exc):
        self.client.close()
        for p in self.processes:
            p.terminate()
        for p in self.processes:
            p.wait()


def timed(command, cluster=None):
    """(seconds, CPU seconds of the command and of the cluster's processes)."""
    before = cluster.cpu_seconds() if cluster else 0.0
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench: {' '.join(command)} failed:\n{process.stderr.read().decode(errors='replace')}")
    process.stderr.close()
    cpu = usage.ru_utime + usage.ru_stime + (cluster.cpu_seconds() - before if cluster else 0.0)
    return seconds, cpu


def shipped_bytes_per_document(folders):
    """The pickled size of the partial counts of every partition, over the documents."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from nbtext.choices import DEFAULT_MAX_BYTES
    from nbtext.classifier.settings import make_settings
    from nbtext.jobs.cluster import count_partition, labelled_entries, partitions

    from nbtext.jobs.calibration import sample_rate

    settings = make_settings()
    entries = labelled_entries(folders)
    rate = sample_rate(0.8 * len(entries))  # the calibration candidates' bound, as train --scheduler sets it
    shipped = sum(
        len(pickle.dumps(count_partition(part, settings, DEFAULT_MAX_BYTES, rate))) for part in partitions(entries)
    )
    return shipped / len(entries)


def bench_cluster(reps, results):
    x1, x8 = DATA / "20news" / "train", replicated("20news", 8)
    classes = lambda folder: sorted(str(p) for p in Path(folder).iterdir() if p.is_dir())  # noqa: E731
    model = str(WORK / "cluster.model")
    times, cpu, startup = {}, {}, {}
    with Cluster(1) as one, Cluster(2) as two:
        startup = {"1 worker": one.startup, "2 workers": two.startup}
        runs = {
            "x1 -j 1": ([NBTEXT, "train", "-j", "1", "-o", model, *classes(x1)], None),
            "x1 cluster, 1 worker": ([NBTEXT, "train", "--scheduler", one.address, "-o", model, *classes(x1)], one),
            "x8 -j 1": ([NBTEXT, "train", "-j", "1", "-o", model, *classes(x8)], None),
            "x8 cluster, 1 worker": ([NBTEXT, "train", "--scheduler", one.address, "-o", model, *classes(x8)], one),
            "x8 cluster, 2 workers": ([NBTEXT, "train", "--scheduler", two.address, "-o", model, *classes(x8)], two),
        }
        for _ in range(reps):
            for name, (command, cluster) in runs.items():
                seconds, cpu_seconds = timed(command, cluster)
                times.setdefault(name, []).append(seconds)
                cpu.setdefault(name, []).append(cpu_seconds)
    results["cluster-startup"] = {name: summary([s]) for name, s in startup.items()}
    results["cluster"] = {name: summary(v) for name, v in times.items()}
    results["cluster-cpu"] = {name: summary(v) for name, v in cpu.items()}
    results["cluster-shipped"] = {"bytes per document, 20news": shipped_bytes_per_document(classes(x1))}


def cluster_targets(r):
    """(description, measured, target, met?) rows of the cluster bench."""
    med = lambda key, name: r[key][name]["median"]  # noqa: E731
    rows = []
    for size in ("x1", "x8"):
        overhead = ratio(med("cluster", f"{size} cluster, 1 worker"), med("cluster", f"{size} -j 1"))
        rows.append((f"train 20news {size}: cluster of 1 worker / -j 1 (time)", overhead, "report", True))
        cpu = ratio(med("cluster-cpu", f"{size} cluster, 1 worker"), med("cluster-cpu", f"{size} -j 1"))
        rows.append((f"train 20news {size}: cluster of 1 worker / -j 1 (CPU s)", cpu, "report", True))
    speedup = ratio(med("cluster", "x8 cluster, 1 worker"), med("cluster", "x8 cluster, 2 workers"))
    rows.append(("train 20news x8 on a cluster: 1 worker / 2 workers (time)", speedup, ">= 1.6", speedup >= 1.6))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    results = {}
    bench_cluster(args.reps, results)
    for key in ("cluster-startup", "cluster", "cluster-cpu"):
        print(key)
        for name, s in results[key].items():
            print(f"  {name:28s} {s['median']:8.3f} s [{s['min']:.3f}-{s['max']:.3f}]")
    print(f"cluster-shipped: {results['cluster-shipped']['bytes per document, 20news']:,.0f} bytes per document")
    for description, value, target, met in cluster_targets(results):
        print(f"  {'met   ' if met else 'MISSED'} {description:58s} {value:6.2f}  (target {target})")


if __name__ == "__main__":
    main()
