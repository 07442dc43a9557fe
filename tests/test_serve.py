"""`nbtext serve` and SpamAssassin's spamd protocol (nbtext.delivery.server, .spamd), end to end:
the installed server started as a process of its own on a free loopback port (stopped by its
PID, always), asked by a raw-socket client of this file's and by the real spamc (Debian's
package spamc; those tests skip, saying so, where it is absent). Its answers are held to what
`nbtext filter` and `nbtext predict` print for the same messages."""

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import GENERAL, NBTEXT, ROOT, real_corpus, stopped
from test_delivery import generated_messages

from nbtext.stats.event_models import EVENT_MODELS

SPAMC = shutil.which("spamc")
needs_spamc = pytest.mark.skipif(SPAMC is None, reason="no spamc here (apt-get install -y spamc)")


class Served:
    """`nbtext serve -m MODEL --listen 127.0.0.1:0 ARGS...` running, its log in a file: the
    port it bound read from its first line."""

    def __init__(self, model, tmp_path, *args, listen=("127.0.0.1:0",)):
        self.log_path = tmp_path / f"serve-{time.monotonic_ns()}.log"
        listening = [a for address in listen for a in ("--listen", address)]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [NBTEXT, "serve", "-m", str(model), *listening, *args], stdin=subprocess.DEVNULL, stderr=log
            )
        deadline = time.monotonic() + 60
        while "with " not in self.log() or " worker" not in self.log():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the server did not start: {self.log()}")
            time.sleep(0.05)
        found = re.search(r"listening on 127\.0\.0\.1:(\d+)", self.log())
        self.port = int(found.group(1)) if found else None

    def log(self):
        return self.log_path.read_text(errors="replace")

    def workers(self, at_least=0):
        """The process ids of the server's workers (its children), once there are `at_least`
        (the parent says it serves before its workers are forked)."""
        deadline = time.monotonic() + 30
        while True:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text()
            if len(children.split()) >= at_least or time.monotonic() > deadline:
                return [int(pid) for pid in children.split()]
            time.sleep(0.02)

    def stop(self):
        """SIGTERM, and its exit status (SIGKILL after 30 s: never left running)."""
        return stopped(self.process)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        for pid in self.workers_left():
            os.kill(pid, signal.SIGKILL)

    def workers_left(self):
        try:
            return self.workers()
        except OSError:
            return []


def asked(port, data, timeout=30):
    """The whole answer to the request `data`, sent whole on a fresh connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        try:
            connection.sendall(data)
            connection.shutdown(socket.SHUT_WR)
        except OSError:  # (closed by the server before it was all sent: its answer may be there)
            pass
        return read_all(connection)


def read_all(connection):
    chunks = []
    try:
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


def request(verb, message=b"", headers=(), version="1.5"):
    head = f"{verb} SPAMC/{version}\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers)
    if verb not in ("PING", "SKIP"):
        head += f"Content-length: {len(message)}\r\n"
    return head.encode() + b"\r\n" + message


def parsed(answer):
    """(status line, {header: value}, body) of a spamd answer."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    return status, dict(line.split(": ", 1) for line in lines if line), body


def filtered(model, message):
    result = subprocess.run([NBTEXT, "filter", "-m", str(model)], input=message, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def predicted(model, paths):
    """{path: label} of `nbtext predict -m MODEL PATHS...`."""
    result = subprocess.run([NBTEXT, "predict", "-m", str(model), *map(str, paths)], capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return {line.split("\t")[0]: line.split("\t")[1] for line in result.stdout.decode().splitlines()}


def trained(path, spam, ham, *args):
    result = subprocess.run(
        [NBTEXT, "train", *args, "-o", str(path), f"spam={spam}", f"ham={ham}"], capture_output=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return path


def sample(folder, n, skip=0):
    return sorted(Path(folder).iterdir())[skip : skip + n]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A part of the SpamAssassin corpus (data/, `make data`): train/spam, train/ham of 150
    messages each, and the test messages."""
    real = real_corpus("spamassassin")
    folder = tmp_path_factory.mktemp("sa")
    for label in ("spam", "ham"):
        (folder / label).mkdir()
        for path in sample(real / "train" / label, 150):
            (folder / label / path.name).symlink_to(path)
    return folder, real / "test"


@pytest.fixture(scope="module")
def sa_model(corpus, tmp_path_factory):
    folder, _ = corpus
    return trained(tmp_path_factory.mktemp("model") / "sa.model", folder / "spam", folder / "ham")


@pytest.fixture
def model(sa_model, tmp_path):
    """A copy of sa_model a test may change."""
    shutil.copy(sa_model, tmp_path / "mail.model")
    return tmp_path / "mail.model"


def test_ping_old_protocol_versions_and_sighup(model, corpus, tmp_path):
    """PING, SKIP, an unknown request; PROCESS of SPAMC/1.0 (no headers, the message till the
    client shuts its side, the answer without Content-length) and of 1.2 (no Spam header), as
    spamd answers them; SIGHUP loads the model anew and the server goes on."""
    message = sample(corpus[1] / "spam", 1, 10)[0].read_bytes()
    expected = filtered(model, message)
    with Served(model, tmp_path) as served:
        assert asked(served.port, b"PING SPAMC/1.5\r\n\r\n") == b"SPAMD/1.5 0 PONG\r\n"
        assert asked(served.port, b"PING SPAMC/1.2\r\n") == b"SPAMD/1.5 0 PONG\r\n"
        assert asked(served.port, b"HELLO SPAMC/1.5\r\n\r\n").startswith(b"SPAMD/1.0 76 ")
        assert asked(served.port, b"PROCESS HTTP/1.1\r\n\r\n").startswith(b"SPAMD/1.0 76 ")
        assert asked(served.port, b"SKIP SPAMC/1.5\r\n\r\n") == b""
        assert asked(served.port, b"PROCESS SPAMC/1.0\r\n" + message) == b"SPAMD/1.0 0 EX_OK\r\n" + expected
        old = asked(served.port, request("PROCESS", message, version="1.2"))
        assert old == f"SPAMD/1.1 0 EX_OK\r\nContent-length: {len(expected)}\r\n\r\n".encode() + expected
        served.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while served.log().count(f"model {model} loaded") < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert served.log().count(f"model {model} loaded") == 1  # (said by the parent)
        assert parsed(asked(served.port, request("PROCESS", message)))[2] == expected
        assert served.stop() == 0
    assert "Traceback" not in served.log()


def test_process_is_filter_and_check_is_predict_on_real_messages(model, corpus, tmp_path):
    """PROCESS answers byte for byte what `nbtext filter` prints, HEADERS its header block,
    CHECK says spam exactly when `nbtext predict` does (unsure is not spam)."""
    _, test = corpus
    paths = sample(test / "spam", 25) + sample(test / "ham", 25)
    labels = predicted(model, paths)
    assert {"spam", "ham"} <= set(labels.values())
    with Served(model, tmp_path) as served:
        for path in paths:
            message = path.read_bytes()
            expected = filtered(model, message)
            status, headers, body = parsed(asked(served.port, request("PROCESS", message)))
            assert (status, body) == ("SPAMD/1.1 0 EX_OK", expected), path
            assert int(headers["Content-length"]) == len(expected)
            status, headers, _ = parsed(asked(served.port, request("CHECK", message)))
            spam, score = re.fullmatch(r"(True|False) ; (\S+ / \S+)", headers["Spam"]).groups()
            assert (status, spam == "True") == ("SPAMD/1.1 0 EX_OK", labels[str(path)] == "spam"), path
            said = re.search(rb"X-Nbtext-Score: (.*?)\r?\n", expected).group(1).decode()
            assert score == said  # the scale: X-Nbtext-Score's pair
            status, _, body = parsed(asked(served.port, request("HEADERS", message)))
            assert expected.startswith(body) and body.endswith((b"\n\n", b"\r\n\r\n", b"\n")), path
        assert served.stop() == 0
    log = served.log()
    assert "Traceback" not in log
    assert re.search(r"127\.0\.0\.1:\d+ PROCESS (spam|ham|unsure) 0\.\d{4} \d+\.\d ms", log), log


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(message=generated_messages())
def test_process_is_filter_on_generated_messages(served_once, message):
    model, port = served_once
    status, _, body = parsed(asked(port, request("PROCESS", message)))
    assert (status, body) == ("SPAMD/1.1 0 EX_OK", filtered(model, message))


@pytest.fixture(scope="module")
def served_once(sa_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("served")
    with Served(sa_model, folder) as served:
        yield sa_model, served.port


def test_a_model_replaced_or_grown_is_used_without_restart(model, corpus, tmp_path):
    """train -o (a rename) and train --update (records appended) are seen by the next request;
    a broken new file leaves the old model serving, said in one line."""
    folder, test = corpus
    message_path = sample(test / "spam", 1, 40)[0]
    message = message_path.read_bytes()
    with Served(model, tmp_path, "--workers", "1") as served:  # (one worker: it has seen every good file)
        before = parsed(asked(served.port, request("PROCESS", message)))[2]
        assert before == filtered(model, message)
        first = served.workers(at_least=1)
        trained(model, folder / "spam", folder / "ham", "--preset", "general")  # replaced, by rename
        after = parsed(asked(served.port, request("PROCESS", message)))[2]
        assert after == filtered(model, message) != before
        deadline = time.monotonic() + 20  # the parent loads it too, and forks a new worker with it
        while set(served.workers_left()) & set(first) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(served.workers(at_least=1)) == 1 and served.workers() != first
        assert parsed(asked(served.port, request("PROCESS", message)))[2] == after
        size = model.stat().st_size
        grown = subprocess.run(
            [NBTEXT, "train", "--update", "-m", str(model), "ham=-"], input=message, capture_output=True, timeout=60
        )
        assert grown.returncode == 0 and model.stat().st_size > size, grown.stderr  # (appended: pending records)
        assert parsed(asked(served.port, request("PROCESS", message)))[2] == filtered(model, message) != after
        good = filtered(model, message)
        broken = tmp_path / "broken"
        broken.write_bytes(b"not a model\n")
        os.replace(broken, model)
        for _ in range(3):
            assert parsed(asked(served.port, request("PROCESS", message)))[2] == good
        deadline = time.monotonic() + 10
        while "the model loaded before serves" not in served.log() and time.monotonic() < deadline:
            time.sleep(0.05)  # (the parent says it, at its next look at the file)
        assert parsed(asked(served.port, request("PROCESS", message)))[2] == good
        assert served.stop() == 0
    log = served.log()
    assert len(re.findall(r"the model loaded before serves", log)) == 1  # (said once)
    assert "the model loaded before serves" in log and "Traceback" not in log
    assert "): replaced" not in log  # (the worker renewed ended as told, not as one that died)


def test_tell_learns_as_train_update_and_forgets_as_forget(model, corpus, tmp_path):
    """TELL with --allow-tell: after the same messages the model file is byte for byte the one
    `train --update ... LABEL=-` and `forget -` write; without it, refused."""
    _, test = corpus
    twin = tmp_path / "twin.model"
    shutil.copy(model, twin)
    spam, ham = sample(test / "spam", 1, 50)[0].read_bytes(), sample(test / "ham", 1, 50)[0].read_bytes()
    with Served(model, tmp_path) as served:
        refused = asked(served.port, request("TELL", spam, [("Message-class", "spam"), ("Set", "local")]))
        assert refused.startswith(b"SPAMD/1.0 69 ") and b"--allow-tell" in refused
    assert model.read_bytes() == twin.read_bytes()
    steps = [  # (what, the message, the command line that does it, whether it changes the model)
        ("spam", spam, ["train", "--update", "-m", str(twin), "spam=-"], True),
        ("ham", ham, ["train", "--update", "-m", str(twin), "ham=-"], True),
        ("spam", spam, ["train", "--update", "-m", str(twin), "spam=-"], False),  # known already
        ("forget", spam, ["forget", "-m", str(twin), "-"], True),
        ("ham", spam, ["train", "--update", "-m", str(twin), "ham=-"], True),
    ]
    with Served(model, tmp_path, "--allow-tell") as served:
        for what, message, command, changes in steps:
            told = [("Remove", "local")] if what == "forget" else [("Message-class", what), ("Set", "local")]
            status, headers, _ = parsed(asked(served.port, request("TELL", message, told)))
            assert status == "SPAMD/1.1 0 EX_OK"
            assert subprocess.run([NBTEXT, *command], input=message, capture_output=True).returncode == 0
            assert model.read_bytes() == twin.read_bytes(), what
            changed = "DidRemove" if what == "forget" else "DidSet"
            assert (changed in headers) == changes, what
        assert served.stop() == 0
    assert "Traceback" not in served.log()


def test_tell_and_train_update_at_once_learn_each_message_once(model, corpus, tmp_path):
    """TELLs from several clients at once (two workers) and `train --update` of a folder, on one
    model: every message learned once, none lost, the file readable after; its counts those
    of a twin that learned the same messages one after another."""
    import json
    import threading

    _, test = corpus
    told = [path.read_bytes() for path in sample(test / "spam", 12, 120)]
    folder = tmp_path / "ham"
    folder.mkdir()
    for path in sample(test / "ham", 8, 120):
        (folder / path.name).write_bytes(path.read_bytes())
    twin = tmp_path / "twin.model"
    shutil.copy(model, twin)
    with Served(model, tmp_path, "--allow-tell") as served:

        def tell(messages):
            for message in messages:
                answer = asked(served.port, request("TELL", message, [("Message-class", "spam"), ("Set", "local")]))
                assert parsed(answer)[0] == "SPAMD/1.1 0 EX_OK", answer

        clients = [threading.Thread(target=tell, args=(told[k::3],)) for k in range(3)]
        for client in clients:
            client.start()
        update = subprocess.run([NBTEXT, "train", "--update", "-m", str(model), f"ham={folder}"], capture_output=True)
        for client in clients:
            client.join()
        assert update.returncode == 0, update.stderr
        tell(told[:4])  # known already: nothing changes
        assert served.stop() == 0
    for message in told:
        subprocess.run([NBTEXT, "train", "--update", "-m", str(twin), "spam=-"], input=message, check=True)
    subprocess.run([NBTEXT, "train", "--update", "-m", str(twin), f"ham={folder}"], check=True)

    def counts(path):
        shown = subprocess.run([NBTEXT, "info", "-m", str(path), "--format", "json"], capture_output=True, check=True)
        return json.loads(shown.stdout)["classes"]

    assert counts(model) == counts(twin)
    assert "Traceback" not in served.log()


def test_sigterm_finishes_the_request_in_flight(model, corpus, tmp_path):
    _, test = corpus
    message = sample(test / "ham", 1, 60)[0].read_bytes()
    data = request("PROCESS", message)
    with Served(model, tmp_path) as served:
        with socket.create_connection(("127.0.0.1", served.port), timeout=30) as connection:
            connection.sendall(data[: len(data) // 2])
            time.sleep(0.3)
            served.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # no longer listening, soon
                try:
                    socket.create_connection(("127.0.0.1", served.port), timeout=5).close()
                except OSError:
                    break
                time.sleep(0.05)
            else:
                pytest.fail("still listening 10 s after SIGTERM")
            connection.sendall(data[len(data) // 2 :])
            answer = read_all(connection)
        assert served.process.wait(30) == 0
    assert parsed(answer)[2] == filtered(model, message)


def test_sigterm_ends_a_milter_session_idle_between_messages(demo_model, tmp_path):
    """Postfix keeps its milter connection open between messages (the server waits up to
    360 s for it): a SIGTERM then stops the server at once, exit status 0, not after 360 s
    (contrib's unit gives a stop 90 s before it kills)."""
    import struct

    with Served(demo_model, tmp_path, "--milter", "127.0.0.1:0") as served:
        milter_port = int(re.search(r"listening on 127\.0\.0\.1:(\d+) \(milter\)", served.log()).group(1))
        with socket.create_connection(("127.0.0.1", milter_port), timeout=30) as mta:
            mta.sendall(struct.pack("!I", 13) + b"O" + struct.pack("!III", 6, 0x1FF, 0x1FFFFF))
            assert mta.recv(17)[4:5] == b"O"
            served.process.send_signal(signal.SIGTERM)
            try:
                status = served.process.wait(20)
            except subprocess.TimeoutExpired:
                status = "still running 20 s after SIGTERM"
    assert status == 0, served.log()


def test_a_worker_killed_is_replaced_and_its_client_gets_no_part_of_a_message(model, corpus, tmp_path):
    _, test = corpus
    message = sample(test / "spam", 1, 70)[0].read_bytes()
    data = request("PROCESS", message)
    with Served(model, tmp_path, "--workers", "1") as served:
        (worker,) = served.workers(at_least=1)
        with socket.create_connection(("127.0.0.1", served.port), timeout=30) as connection:
            connection.sendall(data[:100])
            time.sleep(0.3)
            os.kill(worker, signal.SIGKILL)
            try:
                connection.sendall(data[100:])
            except OSError:
                pass
            answer = read_all(connection)
        assert answer == b"" or not answer.startswith(b"SPAMD/1.1 0 ")
        deadline = time.monotonic() + 30
        while served.workers_left() in ([], [worker]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert parsed(asked(served.port, data))[2] == filtered(model, message)
        assert served.stop() == 0
    assert f"worker {worker} ended (signal 9): replaced" in served.log()


def test_hostile_clients_leave_the_others_served(model, corpus, tmp_path):
    """Garbage, a lying Content-length, an idle connection, 2 MB of headers, connections opened
    and dropped: each ends alone (an error status, or dropped at the timeout), and a client
    asking meanwhile is answered, by one worker."""
    _, test = corpus
    message = sample(test / "ham", 1, 80)[0].read_bytes()
    expected = filtered(model, message)
    with Served(model, tmp_path, "--workers", "1", "--timeout", "2") as served:
        port = served.port
        idle = socket.create_connection(("127.0.0.1", port))
        lying = socket.create_connection(("127.0.0.1", port))
        lying.sendall(b"PROCESS SPAMC/1.5\r\nContent-length: 100000\r\n\r\n" + message[:50])
        for _ in range(300):
            socket.create_connection(("127.0.0.1", port)).close()
        deaf = []  # clients that ask and never read the answer
        for _ in range(4):
            deaf.append(socket.create_connection(("127.0.0.1", port)))
            deaf[-1].sendall(request("PROCESS", message * 100))
        assert asked(port, os.urandom(5000)).startswith(b"SPAMD/1.0 76 ")
        assert asked(port, b"CHECK SPAMC/1.5\r\nContent-length: 12x\r\n\r\nabc").startswith(b"SPAMD/1.0 76 ")
        headers = b"CHECK SPAMC/1.5\r\n" + b"X-Padding: " + b"a" * 100 + b"\r\n"
        assert asked(port, headers * 20000).startswith(b"SPAMD/1.0 76 ")  # (2 MB of headers)
        assert asked(port, b"CHECK SPAMC/1.5\r\n" + b"b" * 2_000_000).startswith(b"SPAMD/1.0 76 ")  # (one line)
        assert asked(port, request("PROCESS", message)[:-10]).startswith(b"SPAMD/1.0 76 ")  # (shorter than said)
        started = time.monotonic()
        assert parsed(asked(port, request("PROCESS", message)))[2] == expected
        assert time.monotonic() - started < 2  # (not after the idle ones' timeout)
        assert read_all(lying) == b"" and read_all(idle) == b""  # dropped at the timeout
        idle.close(), lying.close()
        for connection in deaf:
            connection.close()
        assert parsed(asked(port, request("PROCESS", message)))[2] == expected
        assert served.stop() == 0
    assert "Traceback" not in served.log()


def test_a_message_over_max_size_is_passed_on_unjudged(model, corpus, tmp_path):
    _, test = corpus
    message = sample(test / "spam", 1, 90)[0].read_bytes()
    with Served(model, tmp_path, "--max-size", str(len(message) - 1)) as served:
        status, headers, _ = parsed(asked(served.port, request("CHECK", message)))
        assert (status, headers["Spam"]) == ("SPAMD/1.1 0 EX_OK", "False ; 0.00 / 0.00")
        assert asked(served.port, request("PROCESS", message)).startswith(b"SPAMD/1.0 65 ")
        small = message[: len(message) // 2]
        assert parsed(asked(served.port, request("PROCESS", small)))[2] == filtered(model, small)
        assert served.stop() == 0


def test_compressed_requests_unix_sockets_and_refused_peers(model, corpus, tmp_path):
    _, test = corpus
    message = sample(test / "ham", 1, 95)[0].read_bytes()
    expected = filtered(model, message)
    path = tmp_path / "spamd.sock"
    listen = ("127.0.0.1:0", f"unix:{path}") + (("[::1]:0",) if has_ipv6_loopback() else ())
    with Served(model, tmp_path, "--socket-mode", "600", listen=listen) as served:
        packed = zlib.compress(message)
        answer = asked(served.port, request("PROCESS", packed, [("Compress", "zlib")]))
        assert parsed(answer)[2] == expected
        assert path.stat().st_mode & 0o777 == 0o600
        with socket.socket(socket.AF_UNIX) as connection:
            connection.connect(str(path))
            connection.sendall(request("PROCESS", message))
            connection.shutdown(socket.SHUT_WR)
            assert parsed(read_all(connection))[2] == expected
        if has_ipv6_loopback():
            port = int(re.search(r"listening on \[::1\]:(\d+)", served.log()).group(1))
            with socket.create_connection(("::1", port), timeout=30) as connection:
                connection.sendall(request("PROCESS", message))
                connection.shutdown(socket.SHUT_WR)
                assert parsed(read_all(connection))[2] == expected
        assert served.stop() == 0
    assert not path.exists()
    with Served(model, tmp_path, "--allowed-ips", "10.0.0.0/8") as served:
        assert asked(served.port, request("PROCESS", message)) == b""
        assert served.stop() == 0
    assert re.search(r"127\.0\.0\.1:\d+ refused \(not in --allowed-ips\)", served.log())


def has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_usage_errors_are_one_line(model, tmp_path):
    for args, said in [
        (["--listen", "nowhere"], "an address is HOST:PORT"),
        (["--allowed-ips", "10.0.0.0/33"], "is not an address or CIDR range"),
        (["--socket-mode", "999"], "not a mode in octal"),
        (["-m", str(tmp_path / "missing.model")], "missing.model"),
    ]:
        result = subprocess.run([NBTEXT, "serve", "-m", str(model), *args], capture_output=True, timeout=60)
        assert result.returncode != 0 and result.stderr.decode().count("\n") == 1, result.stderr
        assert said in result.stderr.decode() and b"Traceback" not in result.stderr


def test_a_model_that_is_no_model_file_is_said_as_every_command_says_it(tmp_path):
    """Every kind of path that holds no model (missing, its folder missing, under a file, a
    folder, a device, a FIFO, not a model): serve's one line is the loader's, predict's."""
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "text").write_text("not a model\n")
    for path in ["missing.model", "nofolder/m.model", "text/m.model", "folder", "/dev/null", "fifo", "text"]:
        path = str(tmp_path / path)
        served = subprocess.run(
            [NBTEXT, "serve", "-m", path, "--listen", "127.0.0.1:0"], capture_output=True, timeout=60
        )
        said = subprocess.run([NBTEXT, "predict", "-m", path, "-"], input=b"x", capture_output=True, timeout=60)
        assert served.returncode != 0 and served.stderr.count(b"\n") == 1, served.stderr
        assert served.stderr == said.stderr, path


CONTROLS = b"\x1b]0;owned\x07\x1b[31m\x9b\xc2\x9b\r\x00"  # (a terminal's: OSC, BEL, CSI, C1's CSI raw and in UTF-8)


def test_a_clients_control_bytes_are_never_written_raw_in_the_log(demo_model, tmp_path):
    """A terminal's control bytes wherever a spamd or milter client puts them (the request
    line, every header's name and value, the message, the milter's macros, headers and
    commands): the log shows them as `?` (reading.imapurl.shown, the rule for others' text)."""
    import struct

    def milter_packet(command, data=b""):
        return struct.pack("!I", len(data) + 1) + command + data

    spamd_requests = [
        b"CHECK" + CONTROLS + b" SPAMC/1.5\r\n\r\n",
        b"CHECK SPAMC/1.5" + CONTROLS + b"\r\n\r\n",
        b"CHECK SPAMC/1.5\r\n" + CONTROLS + b"\r\n\r\n",
        *(
            request(
                "TELL" if name in ("Message-class", "Set", "Remove") else "CHECK",
                b"x",
                [(name, CONTROLS.decode("latin-1"))],
            )
            for name in ("User", "Compress", "Message-class", "Set", "Remove", CONTROLS.decode("latin-1"))
        ),
        b"CHECK SPAMC/1.5\r\nContent-length: 1" + CONTROLS + b"\r\n\r\n",
        request(
            "PROCESS", b"Subject: " + CONTROLS + b"\nContent-Type: text/plain; charset=" + CONTROLS + b"\n\n" + CONTROLS
        ),
    ]
    with Served(demo_model, tmp_path, "--milter", "127.0.0.1:0") as served:
        for data in spamd_requests:
            asked(served.port, data)
        milter_port = int(re.search(r"listening on 127\.0\.0\.1:(\d+) \(milter\)", served.log()).group(1))
        for ending in (milter_packet(b"E"), milter_packet(CONTROLS[:1], CONTROLS), milter_packet(b"L", CONTROLS)):
            stream = milter_packet(b"O", struct.pack("!III", 6, 0x1FF, 0x1FFFFF))
            stream += milter_packet(b"D", b"E{i}\0" + CONTROLS + b"\0i\0" + CONTROLS + b"\0")
            stream += milter_packet(b"L", b"Subject\0 " + CONTROLS + b"\0") + milter_packet(b"B", CONTROLS) + ending
            asked(milter_port, stream)
        deadline = time.monotonic() + 30
        while served.log().count(" ms\n") < len(spamd_requests) + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        log = served.log_path.read_bytes()
    assert log.count(b" ms\n") >= len(spamd_requests) + 2, log.decode("utf-8", "replace")
    for line in log.decode("utf-8", "replace").splitlines():
        assert line.isprintable(), repr(line)


# --- the real spamc --------------------------------------------------------------------------


def spamc(port, *args, input):
    return subprocess.run([SPAMC, "-p", str(port), *args], input=input, capture_output=True, timeout=60)


@needs_spamc
def test_spamc(model, corpus, tmp_path):
    """spamc prints what filter prints, spamc -c exits 1 exactly when predict says spam, spamc -L
    learns; a stopped server: spamc passes the message on unchanged (its safe fallback)."""
    _, test = corpus
    paths = sample(test / "spam", 10, 100) + sample(test / "ham", 10, 100)
    labels = predicted(model, paths)
    with Served(model, tmp_path, "--allow-tell") as served:
        for path in paths:
            message = path.read_bytes()
            result = spamc(served.port, input=message)
            assert (result.returncode, result.stdout) == (0, filtered(model, message)), path
            assert spamc(served.port, "--headers", input=message).stdout == result.stdout  # (HEADERS + the body)
            checked = spamc(served.port, "-c", input=message)
            assert checked.returncode == (1 if labels[str(path)] == "spam" else 0), path
            assert re.fullmatch(rb"-?\d+\.\d/-?\d+\.\d\n", checked.stdout), checked.stdout
        learned = spamc(served.port, "-L", "ham", input=paths[0].read_bytes())
        assert (learned.returncode, learned.stdout) == (0, b"Message successfully un/learned\n")
        assert (
            spamc(served.port, "-L", "ham", input=paths[0].read_bytes()).stdout == b"Message was already un/learned\n"
        )
        port = served.port
        assert served.stop() == 0
    message = paths[0].read_bytes()
    result = spamc(port, input=message)
    assert result.stdout == message
    assert spamc(port, "-c", input=message).stdout == b"0/0\n"


# --- the protocol alone, in this process, against every request a client could send -------------


class FakeService:
    """The contract's names (nbtext.delivery.spamd's `service`), judging every message spam."""

    classes = ["ham", "spam"]
    max_bytes = 2000

    def __init__(self):
        from nbtext.delivery.judging import Verdict

        self.verdict = Verdict("spam", 0.99, (4.6, 0.0), [("X-Nbtext-Class", "spam")])
        self.logged, self.judged = [], []

    def judge(self, message):
        self.judged.append(message)
        return self.verdict

    def tagged(self, message, verdict):
        return b"X-Nbtext-Class: spam\n" + message

    def learn(self, message, label):
        return f"learned as {label}"

    def forget(self, message):
        from nbtext.errors import NbtextError

        raise NbtextError("refused")

    def log(self, client, what, verdict=None):
        self.logged.append(what)


LINES = st.sampled_from(
    [
        b"Content-length: 5",
        b"Content-length: 3000",
        b"Content-length: -1",
        b"Content-length: x",
        b"User: me",
        b"Compress: zlib",
        b"Compress: gzip",
        b"Message-class: spam",
        b"Message-class: eggs",
        b"Set: local",
        b"Remove: local",
        b"garbage",
        b"X-Other: " + b"a" * 9000,
        b"",
    ]
)


@st.composite
def requests(draw):
    verb = draw(
        st.sampled_from(
            [
                b"PING",
                b"SKIP",
                b"CHECK",
                b"PROCESS",
                b"HEADERS",
                b"SYMBOLS",
                b"REPORT",
                b"REPORT_IFSPAM",
                b"TELL",
                b"OTHER",
                b"",
            ]
        )
    )
    version = draw(st.sampled_from([b"SPAMC/1.0", b"SPAMC/1.2", b"SPAMC/1.5", b"SPAMC/x", b"HTTP/1.1"]))
    head = [verb + b" " + version] + draw(st.lists(LINES, max_size=6))
    end = draw(st.sampled_from([b"\r\n", b"\n"]))
    body = draw(st.binary(max_size=200)) if draw(st.booleans()) else zlib.compress(b"Subject: x\n\nbody")
    return end.join(head) + end + draw(st.sampled_from([end, b""])) + body


@settings(max_examples=300, deadline=None)
@given(data=requests(), cut=st.integers(0, 10_000), shut=st.booleans())
def test_the_protocol_answers_every_request_whole_or_with_an_error(data, cut, shut):
    """Whatever a client sends (cut anywhere; then it waits, or shuts its side), `answer` returns, never raises,
    and sends an answer that is whole (a body of its Content-length), an error status of one
    line, or nothing; it logs one line."""
    from nbtext.delivery.spamd import answer

    server, client = socket.socketpair()
    with server, client:
        server.settimeout(0.05)
        client.sendall(data[:cut])
        if shut:
            client.shutdown(socket.SHUT_WR)
        service = FakeService()
        answer(server, service, "test")
        server.shutdown(socket.SHUT_WR)
        client.settimeout(5)
        reply = read_all(client)
    assert len(service.logged) == 1
    if reply:
        status, _, rest = reply.partition(b"\r\n")
        assert re.fullmatch(rb"SPAMD/1\.[015] \d+ .*", status), reply
        if not status.startswith((b"SPAMD/1.1 0 ", b"SPAMD/1.0 0 ", b"SPAMD/1.5 0 ")):
            assert rest == b"", reply  # an error status: one line
        elif not status.startswith(b"SPAMD/1.0 "):  # (SPAMC/1.0's answer is the message alone)
            head, _, body = rest.partition(b"\r\n\r\n")
            length = re.search(rb"(?:^|\r\n)Content-length: (\d+)", head)
            assert length is None or len(body) == int(length.group(1)), reply


@settings(max_examples=20, deadline=None)
@given(data=requests(), cut=st.integers(0, 300))
def test_a_client_sending_a_byte_now_and_then_is_dropped_at_the_timeout(data, cut):
    """A client that sends part of a request at once, then a byte every 0.05 s (each within the
    0.2 s timeout): `answer` ends within the timeout of the whole request (and a margin), not
    when the client is done; a trickle held a --max-connections slot for as long as it liked."""
    import threading

    from nbtext.delivery.spamd import answer

    data += b"x" * 100_000
    server, client = socket.socketpair()
    stop = threading.Event()

    def trickled():
        try:
            client.sendall(data[:cut])
            for byte in data[cut : cut + 60]:  # (3 s, then it shuts its side: the test ends)
                if stop.wait(0.05):
                    return
                client.send(bytes([byte]))
            client.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    sender = threading.Thread(target=trickled)
    with server, client:
        server.settimeout(0.2)
        sender.start()
        started = time.monotonic()
        try:
            answer(server, FakeService(), "test")
            took = time.monotonic() - started
        finally:
            stop.set()
            sender.join()
    assert took < 1.5, f"answered after {took:.1f} s"


def test_a_model_file_crafted_or_flipped_leaves_the_old_model_serving(demo_model, tmp_path):
    """Every crafted header of test_hostile_models and random bit flips, put in place of the
    model: the server's loader (the parent's, the model loaded whole) refuses it with an
    NbtextError or loads a usable model, and Service.fresh keeps the old one serving; never
    another exception (which would stop the parent)."""
    import random

    from nbtext.delivery.judging import loaded
    from nbtext.delivery.server import Service
    from nbtext.errors import NbtextError
    from test_hostile_models import CRAFTED, assemble, parts, with_key

    path = tmp_path / "mail.model"
    shutil.copy(demo_model, path)
    service = Service(str(path), say=lambda line: None)
    message = b"Subject: free prize\n\nclick now\n"
    before = service.judge(message)
    data = Path(demo_model).read_bytes()
    header, payload = parts(data)
    crafted = [assemble(with_key(header, key, value), payload, not key.startswith("payload")) for key, value in CRAFTED]
    rng = random.Random(50)
    flipped = []
    for _ in range(100):
        changed = bytearray(data)
        changed[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        flipped.append(bytes(changed))
    for bad in crafted + flipped:
        (tmp_path / "new").write_bytes(bad)
        os.replace(tmp_path / "new", path)
        try:
            loaded(str(path), held=True)
        except NbtextError:
            assert service.fresh() is False
            assert service.judge(message).fields == before.fields  # the old model serves
        else:
            service.fresh()
        shutil.copy(demo_model, path)
        service.fresh()


@pytest.mark.parametrize("event_model", sorted(EVENT_MODELS))
def test_every_event_models_model_is_served_as_filter_judges_with_it(event_model, tmp_path):
    """A model of each event model starts a server, and PROCESS answers what `nbtext filter`
    prints with it: also a categorical model, which judges no mail (filter tags each message
    `error`, saying why). Its server refused to start, naming the message it is warmed up with
    (`Error: -: a categorical model classifies table rows`), since a held model judges one as
    it is loaded."""
    path, train = tmp_path / f"{event_model}.model", ROOT / "corpora" / "mail" / "train"
    if event_model == "categorical":
        table = tmp_path / "rows.tsv"
        table.write_text("label\tcolour\nspam\tred\nham\tblue\nspam\tred\nham\tgreen\n")
        args = ["--table", str(table), "--label-col", "label"]
    else:
        args = [*GENERAL, f"spam={train / 'spam'}", f"ham={train / 'ham'}"]
    result = subprocess.run(
        [NBTEXT, "train", "--model", event_model, "-o", str(path), *args], capture_output=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    messages = [p.read_bytes() for p in sample(ROOT / "corpora" / "mail" / "test" / "spam", 2)]
    with Served(path, tmp_path, "--workers", "1") as served:
        for message in [*messages, b"Subject: red\n\nred\n"]:
            assert parsed(asked(served.port, request("PROCESS", message)))[2] == filtered(path, message)
