"""`nbtext serve`'s part of `make bench` (issue 50): the server asked by SpamAssassin's own
client spamc, against bogofilter and `nbtext filter` given the same message, each a whole
process, interleaved (medians).

    .venv/bin/python bench/serve.py [--reps N]     # this part alone

Both filters learn SpamAssassin's train split: nbtext its defaults for classes spam and ham
(the spam preset), bogofilter -s and -n of the same files. The server runs with --workers 2
(one a core on the 2 cores the targets are set for; its default) on a free loopback port and
is stopped by its PID, whatever happens. spamc runs with -x (no safe fallback), so a server
that did not answer stops the bench instead of timing spamc's pass-through. The rows:
- one message (the test split's first spam): `spamc -c < msg` / `bogofilter -p < msg`, and
  `nbtext filter < msg` / `spamc -c < msg`; the floor under the first: spamc -c against a
  server that answers at once and judges nothing (AT_ONCE), against bogofilter -p, and what
  nbtext serve adds to it;
- 8 clients at once: 8 shell loops each running spamc -c over a batch of its own, their
  messages per second against one such loop's;
- the server's memory: Pss (/proc/PID/smaps_rollup) summed over its processes, the parent and
  its workers, once each worker has answered (its PID is on its log lines), against one loaded
  model: the peak RSS of one process that loads the model as the server does
  (judging.loaded) and judges the same messages the workers judged (ONE_LOADED_MODEL); a
  server of one worker's Pss beside it, and the first server's again after the sizes below
  (`nbtext filter`'s peak RSS is reported too: it loads the model whole only for a message
  near a turn);
- latency by message size, 1 KB to 500 KB (KB = 1,000 bytes: under spamc's limit of 512,000).
Where spamc or bogofilter is missing, the rows needing it say so and are skipped.
"""

import argparse
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import DATA, NBTEXT, PYTHON, WORK, ratio, run, summary

SPAMC = shutil.which("spamc")
BOGOFILTER = shutil.which("bogofilter")
WORKERS = 2
CLIENTS, BATCH = 8, 40  # 8 clients at once, each a batch of 40 messages
SIZES_KB = (1, 10, 50, 100, 250, 500)
TRAIN = DATA / "spamassassin" / "train"
TEST = DATA / "spamassassin" / "test"


class Server:
    """`nbtext serve -m MODEL --listen 127.0.0.1:0 --workers N` for a `with` block: the port it
    bound and its workers' PIDs read from its log; stopped by its PID on leaving (SIGTERM,
    SIGKILL after 30 s)."""

    def __init__(self, model, workers):
        self.model, self.workers = model, workers

    def __enter__(self):
        self.log_path = Path(tempfile.mkstemp(prefix="nbtext-serve-", suffix=".log")[1])
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [NBTEXT, "serve", "-m", str(self.model), "--listen", "127.0.0.1:0", "--workers", str(self.workers)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        try:
            deadline = time.monotonic() + 60
            while f"with {self.workers} worker" not in self.log():
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"bench: nbtext serve did not start:\n{self.log()}")
                time.sleep(0.05)
            self.port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", self.log()).group(1))
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()  # (its workers stop when they see their parent gone)
                self.process.wait()
        self.log_path.unlink(missing_ok=True)

    def log(self):
        return self.log_path.read_text(errors="replace")

    def checks(self):
        """The CHECK requests answered so far, by worker PID."""
        return re.findall(r"^nbtext serve\[(\d+)\]: \S+ CHECK ", self.log(), re.M)

    def processes(self):
        """The server's process tree: the parent and its children, theirs and so on."""
        pids, tree = [self.process.pid], []
        while pids:
            pid = pids.pop()
            tree.append(pid)
            try:
                pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
            except OSError:
                pass
        return tree

    def spamc(self, *args):
        return [SPAMC, "-x", "-d", "127.0.0.1", "-p", str(self.port), *args]


# A server that answers every request at once, judging nothing: spamc -c against it is the
# client's own cost (its process, its connection), the least any server behind spamc can take.
AT_ONCE = r"""
import socket, sys
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    with connection:
        data = b""
        while b"\r\n\r\n" not in data:
            data += connection.recv(65536) or b"\r\n\r\n"
        head, _, body = data.partition(b"\r\n\r\n")
        length = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
        while length and len(body) < length[0]:
            body += connection.recv(65536) or b" " * length[0]
        connection.sendall(b"SPAMD/1.1 0 EX_OK\r\nSpam: True ; 5.0 / 0.0\r\n\r\n")
"""


class AtOnce:
    """AT_ONCE for a `with` block: its port; stopped by its PID on leaving."""

    def __enter__(self):
        self.process = subprocess.Popen([PYTHON, "-c", AT_ONCE], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        self.port = int(self.process.stdout.readline())
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()

    def spamc(self, *args):
        return [SPAMC, "-x", "-d", "127.0.0.1", "-p", str(self.port), *args]


def pss_mib(pids):
    """The Pss of these processes together (each shared page counted once over its sharers)."""
    kib = 0
    for pid in pids:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            kib += sum(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
    return kib / 1024


def timed(contenders, reps):
    """{name: [seconds...]} and {name: [peak MiB...]} of whole processes, A B C A B C ...:
    spamc -c and bogofilter -p say the verdict in their exit status too (0, 1, 2)."""
    times = {name: [] for name in contenders}
    memory = {name: [] for name in contenders}
    for _ in range(reps):
        for name, (command, stdin) in contenders.items():
            seconds, mib, _, _ = run(command, stdin, ok=(0, 1, 2))
            times[name].append(seconds)
            memory[name].append(mib)
    return times, memory


def trained():
    """build/bench/serve.model (nbtext's defaults) and build/bench/bogofilter/ (its wordlist),
    both of SpamAssassin's train split."""
    model = WORK / "serve.model"
    run([NBTEXT, "train", "-q", "-o", str(model), str(TRAIN / "spam"), str(TRAIN / "ham")])
    wordlist = WORK / "bogofilter"
    if BOGOFILTER:
        shutil.rmtree(wordlist, ignore_errors=True)
        wordlist.mkdir(parents=True)
        for label, flag in (("spam", "-s"), ("ham", "-n")):
            names = WORK / f"bogofilter-{label}.list"
            names.write_text("".join(f"{path}\n" for path in sorted((TRAIN / label).iterdir())))
            run([BOGOFILTER, "-d", str(wordlist), flag, "-b"], str(names))  # -b: file names on stdin
    return model, wordlist


def sized_messages():
    """build/bench/serve-sizes/N.eml: a mail of N KB (N,000 bytes), its body the test split's
    spam bodies one after another, made once."""
    target = WORK / "serve-sizes"
    if (target / "done").exists():
        return {kb: target / f"{kb}.eml" for kb in SIZES_KB}
    target.mkdir(parents=True, exist_ok=True)
    text = b"".join(
        path.read_bytes().replace(b"\r\n", b"\n").partition(b"\n\n")[2] for path in sorted((TEST / "spam").iterdir())
    )
    head = b"From: a@example.com\nTo: b@example.org\nSubject: sized\nMessage-ID: <sized@example.com>\n\n"
    for kb in SIZES_KB:
        body = (text * (1 + kb * 1000 // max(1, len(text))))[: kb * 1000 - len(head)]
        (target / f"{kb}.eml").write_bytes(head + body)
    (target / "done").touch()
    return {kb: target / f"{kb}.eml" for kb in SIZES_KB}


def clients_rate(server, batches):
    """Messages per second of len(batches) shell loops at once, each running spamc -c over its
    batch; every request checked answered in the server's log."""
    before = len(server.checks())
    command = " ".join(shlex.quote(word) for word in server.spamc("-c"))
    loop = f'for message do {command} < "$message" > /dev/null || [ $? = 1 ] || exit 2; done'
    started = time.perf_counter()
    clients = [subprocess.Popen(["sh", "-c", loop, "sh", *batch]) for batch in batches]
    statuses = [client.wait() for client in clients]
    seconds = time.perf_counter() - started
    messages = sum(len(batch) for batch in batches)
    deadline = time.monotonic() + 10  # (a request's log line is written once its answer is sent)
    while len(server.checks()) - before < messages and time.monotonic() < deadline:
        time.sleep(0.01)
    if any(statuses) or len(server.checks()) - before != messages:
        raise SystemExit(f"bench: spamc clients failed ({statuses}):\n{server.log()[-2000:]}")
    return messages / seconds


def bench_serve(reps, results):
    """The server's rows into `results` (see the module's docstring); the rows skipped, and why,
    in results["notes"]."""
    notes = results.setdefault("notes", [])
    if SPAMC is None:
        notes.append("nbtext serve: no spamc here (apt-get install spamc): its rows are skipped")
        return
    if BOGOFILTER is None:
        notes.append("nbtext serve: no bogofilter here (apt-get install bogofilter): its rows are skipped")
    WORK.mkdir(parents=True, exist_ok=True)
    model, wordlist = trained()
    message = str(sorted((TEST / "spam").iterdir())[0])
    bogofilter = lambda: [BOGOFILTER, "-d", str(wordlist), "-p"]
    with Server(model, WORKERS) as server, AtOnce() as at_once:
        contenders = {
            "spamc -c < message": (server.spamc("-c"), message),
            "spamc -c < message, a server that answers at once": (at_once.spamc("-c"), message),
        }
        if BOGOFILTER:
            contenders["bogofilter -p < message"] = (bogofilter(), message)
        contenders["nbtext filter < message"] = ([NBTEXT, "filter", "-m", str(model)], message)
        times, peaks = timed(contenders, max(reps, 10) * 2)
        results["serve-one-message"] = {name: summary(v) for name, v in times.items()}
        results["serve-filter-memory"] = {"nbtext filter < message": summary(peaks["nbtext filter < message"])}

        messages = sorted(str(p) for label in ("spam", "ham") for p in (TEST / label).iterdir())
        batches = [messages[i::CLIENTS][:BATCH] for i in range(CLIENTS)]
        rates = {"1 client": [], f"{CLIENTS} clients at once": []}
        for k in range(max(reps, 5)):
            rates["1 client"].append(clients_rate(server, [batches[k % CLIENTS]]))
            rates[f"{CLIENTS} clients at once"].append(clients_rate(server, batches))
        results["serve-clients-rate"] = {name: summary(v) for name, v in rates.items()}
        memory = {f"server, {WORKERS} workers (Pss)": pss_mib(answered(server))}

        sized = sized_messages()
        contenders = {}
        for kb, path in sized.items():
            contenders[f"spamc -c, {kb} KB"] = (server.spamc("-c"), str(path))
            if BOGOFILTER:
                contenders[f"bogofilter -p, {kb} KB"] = (bogofilter(), str(path))
            contenders[f"nbtext filter, {kb} KB"] = ([NBTEXT, "filter", "-m", str(model)], str(path))
        times, _ = timed(contenders, max(reps, 10))
        results["serve-latency"] = {name: summary(v) for name, v in times.items()}
        memory[f"server, {WORKERS} workers, after the sizes (Pss)"] = pss_mib(server.processes())
    with Server(model, 1) as server:
        clients_rate(server, batches)  # (the same messages as the server of 2 workers answered)
        memory["server, 1 worker (Pss)"] = pss_mib(answered(server))
    messages = [message for batch in batches for message in batch]
    _, memory["one loaded model (peak RSS)"], _, _ = run([PYTHON, "-c", ONE_LOADED_MODEL, str(model), *messages])
    results["serve-memory"] = {name: summary([mib]) for name, mib in memory.items()}
    results["serve-memory"].update(results.pop("serve-filter-memory"))


# One loaded model: a process that loads the model as the server does (judging.loaded) and
# judges the messages its workers judged, as one worker would without the fork.
ONE_LOADED_MODEL = """
import sys
from nbtext.delivery import judging
model = judging.loaded(sys.argv[1], held=True)
for path in sys.argv[2:]:
    with open(path, "rb") as message:
        judging.verdict(model, message.read(), None, 0, 10_000_000)
"""


def answered(server):
    """The server's processes once each of its workers has answered a CHECK (more clients at
    once until each worker's PID is on a log line)."""
    workers = set(server.processes()[1:])
    message = str(sorted((TEST / "ham").iterdir())[0])
    for _ in range(50):
        if workers <= {int(pid) for pid in server.checks()}:
            return server.processes()
        clients_rate(server, [[message] * 4 for _ in range(CLIENTS)])
    raise SystemExit(f"bench: not every worker of {sorted(workers)} answered:\n{server.log()[-2000:]}")


def serve_targets(r):
    """(description, measured, target, met?) of issue 50's rows that were measured."""
    rows = []
    if "serve-one-message" not in r:
        return rows
    med = lambda key, name: r[key][name]["median"]
    one = r["serve-one-message"]
    if "bogofilter -p < message" in one:
        vs_bogofilter = ratio(
            med("serve-one-message", "spamc -c < message"), med("serve-one-message", "bogofilter -p < message")
        )
        rows.append(
            ("one message: spamc -c (nbtext serve) / bogofilter -p", vs_bogofilter, "<= 0.5", vs_bogofilter <= 0.5)
        )
        at_once = "spamc -c < message, a server that answers at once"
        floor = ratio(med("serve-one-message", at_once), med("serve-one-message", "bogofilter -p < message"))
        rows.append(("  (spamc -c, a server that answers at once / bogofilter -p: the floor)", floor, "report", True))
        own = ratio(
            med("serve-one-message", "spamc -c < message") - med("serve-one-message", at_once),
            med("serve-one-message", "bogofilter -p < message"),
        )
        rows.append(("  (nbtext serve's own time, spamc -c's less the floor's / bogofilter -p)", own, "report", True))
    vs_filter = ratio(
        med("serve-one-message", "nbtext filter < message"), med("serve-one-message", "spamc -c < message")
    )
    rows.append(("  (nbtext filter / spamc -c: the process per message saved)", vs_filter, "report", True))
    clients = ratio(med("serve-clients-rate", f"{CLIENTS} clients at once"), med("serve-clients-rate", "1 client"))
    rows.append(
        (f"nbtext serve --workers {WORKERS}: {CLIENTS} clients' rate / 1 client's", clients, ">= 1.6", clients >= 1.6)
    )
    memory = lambda name: r["serve-memory"][name]["median"]
    one = memory("one loaded model (peak RSS)")
    whole = ratio(memory(f"server, {WORKERS} workers (Pss)"), one)
    rows.append((f"nbtext serve --workers {WORKERS}: Pss / one loaded model", whole, "<= 1.5", whole <= 1.5))
    single = ratio(memory("server, 1 worker (Pss)"), one)
    rows.append(("  (nbtext serve --workers 1: Pss / one loaded model)", single, "report", True))
    sizes = ratio(memory(f"server, {WORKERS} workers, after the sizes (Pss)"), one)
    rows.append(
        (f"  (--workers {WORKERS}, after messages up to {SIZES_KB[-1]} KB / one loaded model)", sizes, "report", True)
    )
    return rows


def latency_table(r):
    """Latency by message size: the medians in milliseconds, and serve's against the others."""
    if "serve-latency" not in r:
        return ""
    latency = r["serve-latency"]
    peers = ["spamc -c", *(["bogofilter -p"] if f"bogofilter -p, {SIZES_KB[0]} KB" in latency else []), "nbtext filter"]
    lines = ["latency by message size (median ms; spamc -c asks nbtext serve)"]
    lines.append(
        "  "
        + f"{'size':>7s}"
        + "".join(f"{peer:>16s}" for peer in peers)
        + "".join(f"{'/ ' + peer:>18s}" for peer in peers[1:])
    )
    for kb in SIZES_KB:
        ms = [latency[f"{peer}, {kb} KB"]["median"] * 1000 for peer in peers]
        lines.append(
            "  " + f"{kb:>4d} KB" + "".join(f"{m:16.1f}" for m in ms) + "".join(f"{ms[0] / m:18.2f}" for m in ms[1:])
        )
    return "\n".join(lines)


def main():
    from bench import machine, report

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each measurement")
    args = parser.parse_args()
    if not TRAIN.is_dir():
        sys.exit("bench: data/spamassassin is missing; run 'make corpora' first")
    results = {"machine": machine(), "reps": args.reps}
    bench_serve(args.reps, results)
    results["targets"] = serve_targets(results)
    print(report(results))
    print(latency_table(results))


if __name__ == "__main__":
    main()
