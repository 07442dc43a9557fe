"""`nbtext serve`: the model held in memory by a resident process, answering the clients mail
servers already run (spamd's protocol: nbtext.delivery.spamd) on the addresses it listens on.

One parent binds the listeners and loads the model, then forks the workers, which share the
model loaded before the fork (copy-on-write, as spamd's children). Each worker accepts on
every listener and answers each connection in a thread of its own, at most its share of
--max-connections at once; the verdicts themselves take turns under the worker's lock (one
verdict at a time: a worker's threads share one core, the workers use them all). The parent
only watches: a worker that dies is replaced; a model file changed (or SIGHUP) is loaded in the
parent and new workers forked with it in place of the old, which finish their requests
(Server); SIGTERM or SIGINT stops the listening and lets every worker finish the requests in
flight, then exits 0.

A listener carries its protocol's `answer(connection, service, client)` (the contract of
nbtext.delivery.spamd and .milter); `Service` is what a protocol asks of the server. Its
verdicts are nbtext.delivery.judging's, the ones `nbtext filter` writes; before each, a stat
of the model file (inode, size, mtime) finds a model replaced (train -o, merge -o: a rename)
or grown (train --update and TELL append pending records), and loads it anew: a new file that
cannot be loaded leaves the old model serving, said in one log line (by the parent).
"""

import gc
import os
import signal
import socket
import sys
import threading
import time

from nbtext import choices
from nbtext.delivery import judging
from nbtext.errors import ModelRefused, NbtextError, unless_signal
from nbtext.reading.imapurl import shown

DEFAULT_ADDRESS = f"127.0.0.1:{choices.SERVE_PORT}"
DEFAULT_ALLOWED = ("127.0.0.0/8", "::1/128")  # loopback alone, as spamd's -A by default
LISTEN_BACKLOG = 128
STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# a milter connection lasts an SMTP session, and Postfix says nothing on it between the session's
# messages: it may wait as long as Postfix's smtpd_timeout (300 s) on the client, and more
MILTER_IDLE = 360.0
RESPAWN_PAUSE = 1.0  # seconds between replacing workers that die as soon as they start
POLL = 0.2  # seconds between the parent's looks at its workers and at the model file
RENEWAL_PAUSE = 2.0  # seconds at least between two renewals of the workers (a model changed often: TELL)


class Told(str):
    """What a TELL did, as a short text, and whether it changed the model (`changed`: spamd's
    DidSet / DidRemove)."""

    changed = False


class Service:
    """What a protocol's `answer` asks of the server (the contract in nbtext.delivery's
    protocols): judge, tagged, classes, max_bytes, learn, forget, log; and `stopping`, set in a
    worker told to stop, on which a protocol may end a connection idle between its requests."""

    def __init__(
        self,
        model_path,
        alpha=None,
        unsure_below=None,
        max_bytes=choices.SERVE_MAX_SIZE,
        cut=choices.DEFAULT_MAX_BYTES,
        allow_tell=False,
        say=None,
    ):
        self.model_path, self.alpha, self.unsure_below = model_path, alpha, unsure_below
        self.max_bytes, self.cut, self.allow_tell = max_bytes, cut, allow_tell
        writer = say or _said_on_stderr
        self.say = lambda line: writer(shown(line))  # (every line: a client's bytes shown, never a terminal's controls)
        self._judging, self._learning = threading.Lock(), threading.Lock()
        self._started = threading.local()
        self.refused = None  # the stamp of a file that could not be loaded (said once)
        self.stopping = False  # a worker's, on SIGTERM: a connection idle between requests may end
        self.in_worker = False  # (see fresh)
        self.before = None  # a worker's (model, stamp) before the file it loaded last (see judge)
        try:  # (before the file is read: a change after it is seen next time)
            self.stamp = model_stamp(model_path)
        except OSError:  # (no file: the loader says why, as it says it for every command)
            self.stamp = None
        self.model = judging.loaded(model_path, alpha, held=True)  # (the parent's: shared by the workers)

    @property
    def classes(self):
        return self.model.classes

    def judge(self, message):
        """The Verdict of `message` (bytes) by the model as it is now; never raises."""
        with self._judging:
            self.fresh()
            while True:
                try:
                    return judging.verdict(self.model, message, self.unsure_below, 0, self.cut, say=self.say)
                except (
                    ModelRefused
                ) as e:  # (a worker's model, loaded as filter loads it, refused once a message read it)
                    if self.before is None:
                        self.say(str(e))
                        return judging.UNJUDGED
                # the file is refused whole, as the parent refused it when it loaded it: the model
                # loaded before serves here too (fresh's rule), and judges the message
                self.model, self.stamp, self.refused, self.before = *self.before, self.stamp, None

    def tagged(self, message, verdict):
        """What `nbtext filter` prints for `message` judged so."""
        return judging.tagged(message, verdict.fields, say=self.say)

    def fresh(self, forced=False):
        """Load the model file anew when it changed since it was loaded (or when `forced`:
        SIGHUP): whether it was. A file that cannot be loaded leaves the model loaded before,
        said once (by the parent: a worker, `in_worker`, meets the same file and says nothing).
        The parent loads it held (judging.loaded), for the workers it forks with it; a worker
        loads it as `nbtext filter` does, to answer by it at once: a held model with pending
        records (each learned message appends one) takes several times as long to load, and
        within RENEWAL_PAUSE the parent's fresh workers hold it whole."""
        try:
            stamp = model_stamp(self.model_path)
        except OSError as e:
            stamp = ("gone", e.errno)
            if stamp != self.refused and not self.in_worker:
                self.say(
                    f"cannot read the model {self.model_path} ({os.strerror(e.errno)}): the model loaded before serves"
                )
            self.refused = stamp
            return False
        if stamp in (self.stamp, self.refused) and not forced:
            return False
        try:
            model = judging.loaded(self.model_path, self.alpha, held=not self.in_worker)
        except NbtextError as e:
            if (stamp != self.refused or forced) and not self.in_worker:
                self.say(f"{e}: the model loaded before serves")
            self.refused = stamp
            return False
        self.before = (self.model, self.stamp) if self.in_worker else None  # (see judge)
        self.model, self.stamp, self.refused = model, stamp, None
        if not self.in_worker:
            self.say(f"model {self.model_path} loaded ({', '.join(self.model.classes)})")
        return True

    def learn(self, message, label):
        """TELL's Message-class with Set: local: `message` learned as `label`, as `nbtext train
        --update -m MODEL LABEL=-` learns it from stdin (the same reader, the same learner)."""
        return self._changed(message, label)

    def forget(self, message):
        """TELL's Remove: local: `message` forgotten, as `nbtext forget -m MODEL -` forgets it."""
        return self._changed(message, None)

    def _changed(self, message, label):
        from io import BytesIO

        from nbtext.jobs.learning import changed_model
        from nbtext.reading.documents import DEFAULT_BATCH, in_batches
        from nbtext.reading.sources import documents
        from nbtext.stats.changes import changes_anything

        if not self.allow_tell:
            raise NbtextError("TELL is not allowed (nbtext serve --allow-tell allows it)")
        problems, unknown = [], []
        with self._learning:  # (the model's lock is a file lock: one per process, not per thread)
            learned = changed_model(
                self.model_path,
                self.model_path,
                documents("-", label=label, stdin=BytesIO(message), max_bytes=self.cut),
                lambda docs: in_batches(docs, DEFAULT_BATCH),
                lambda doc, problem: problems.append(problem),
                label is None,
                unknown.append,
            )
        if problems:
            raise NbtextError(f"not learned: {problems[0]}")
        stats = learned.stats
        if label is None:
            told = Told("forgotten" if stats.get("forgotten") else "not known: nothing forgotten")
        elif stats.get("added") or stats.get("moved"):
            told = Told(f"learned as {label}")
        else:
            told = Told(f"known already as {label}: nothing learned")
        told.changed = changes_anything(stats)
        return told

    def started(self):
        """A request begins now (its log line says the time since)."""
        self._started.at = time.perf_counter()

    def log(self, client, what, verdict=None):
        """One line for one request: the client, what it asked, the verdict and P(spam) (or
        the probability of the class decided, for a model without spam), the milliseconds
        since the connection was accepted or the connection's last request was logged."""
        now = time.perf_counter()
        took = (now - getattr(self._started, "at", now)) * 1000
        self._started.at = now
        said = f"{client} {what}"
        if verdict is not None:
            said += f" {verdict.label}" + (f" {verdict.probability:.4f}" if verdict.probability is not None else "")
        self.say(f"{said} {took:.1f} ms")


def model_stamp(path):
    """What tells a model file changed, at the cost of one stat: a rename puts another inode
    in its place, an append changes its size (and mtime), a chmod its ctime (a file refused
    for its mode is tried again once it is changed)."""
    status = os.stat(path)
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns


def _said_on_stderr(line):
    """One log line on the process's stderr, whole, with the worker's process id."""
    try:
        sys.__stderr__.write(f"nbtext serve[{os.getpid()}]: {line}\n")
        sys.__stderr__.flush()
    except (OSError, ValueError, AttributeError):
        pass


# --- listeners ------------------------------------------------------------------------


class Listener:
    """One address listened on (`text` as given: HOST:PORT, [V6]:PORT or unix:PATH), with its
    protocol's `answer`; `socket` once bound."""

    def __init__(self, text, answer, protocol, socket_mode=None):
        self.text, self.answer, self.protocol, self.socket_mode = text, answer, protocol, socket_mode
        self.socket, self.path = None, None

    def bind(self):
        """Bind and listen (an NbtextError that says why not); the address bound, as said."""
        family, address = parsed_address(self.text)
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            if family == socket.AF_UNIX:
                _unlink_stale(address)
                sock.bind(address)
                self.path = address
                if self.socket_mode is not None:
                    os.chmod(address, self.socket_mode)
                bound = f"unix:{address}"
            else:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(address)
                host, port = sock.getsockname()[:2]
                bound = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
        except OSError as e:
            sock.close()
            raise NbtextError(f"cannot listen on {self.text} ({e.strerror or e})") from None
        self.socket = sock
        return bound

    def close(self, unlink=False):
        if self.socket is not None:
            self.socket.close()
        if unlink and self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass


def parsed_address(text):
    """(family, address) of HOST:PORT, [V6]:PORT or unix:PATH; an NbtextError that says the
    forms for anything else."""
    forms = "HOST:PORT, [IPV6]:PORT or unix:PATH"
    if text.startswith("unix:"):
        if not text[5:]:
            raise NbtextError(f"--listen {text!r}: give the socket's path (unix:PATH)")
        return socket.AF_UNIX, text[5:]
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdecimal() or not host or int(port) > 65535:
        raise NbtextError(f"--listen {text!r}: an address is {forms}")
    if host.startswith("["):
        if not host.endswith("]"):
            raise NbtextError(f"--listen {text!r}: an address is {forms}")
        host = host[1:-1]
    try:
        found = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM, flags=socket.AI_NUMERICSERV)
    except (socket.gaierror, UnicodeError) as e:
        raise NbtextError(f"--listen {text!r}: cannot find the host {host!r} ({e})") from None
    family, _, _, _, address = found[0]
    return family, address


def _unlink_stale(path):
    """Remove a socket left at `path` by a server gone (nothing answers it); anything else
    there, or a live server, is an error."""
    import stat

    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise NbtextError(f"cannot listen on unix:{path}: it exists and is not a socket")
    except FileNotFoundError:
        return
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise NbtextError(f"cannot listen on unix:{path}: a server answers there already")


def allowed_networks(text):
    """The networks of --allowed-ips (CIDR[,CIDR]...; an address alone is its /32 or /128)."""
    import ipaddress

    networks = []
    for part in (p.strip() for p in text.split(",")):
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise NbtextError(
                f"--allowed-ips: {part!r} is not an address or CIDR range (e.g. 192.168.1.0/24)"
            ) from None
    return networks


def peer_allowed(peer, networks):
    """Whether a TCP peer's address lies in `networks` (an IPv4 address mapped into IPv6 as
    the IPv4 one); a Unix socket's peer always is (its file's mode decides)."""
    import ipaddress

    if not isinstance(peer, tuple):
        return True
    address = ipaddress.ip_address(peer[0].split("%", 1)[0])
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in networks if network.version == address.version)


def client_name(peer):
    if isinstance(peer, tuple):
        host, port = peer[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return "unix"


# --- the workers ------------------------------------------------------------------------


class Worker:
    """A forked worker's loop: accept on every listener while there is room (its share of
    --max-connections), each connection answered in a thread; SIGTERM: stop accepting, let the
    threads finish, exit 0; SIGHUP: load the model anew before the next request."""

    def __init__(self, listeners, service, networks, timeout, slots):
        self.listeners, self.service, self.networks, self.timeout = listeners, service, networks, timeout
        service.in_worker = True
        self.slots = threading.BoundedSemaphore(slots)
        self.stopping = self.reload = False
        self.threads = set()

    def run(self, held=()):
        import selectors

        _one_allocator_arena()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the parent's to handle: it stops the workers)
        signal.signal(signal.SIGTERM, lambda number, frame: self._stop())
        signal.signal(signal.SIGHUP, lambda number, frame: setattr(self, "reload", True))
        selector = selectors.DefaultSelector()
        for listener in self.listeners:
            selector.register(listener.socket, selectors.EVENT_READ, listener)
        woken, wake = os.pipe()  # a signal wakes the select at once (its handler only sets a flag)
        os.set_blocking(wake, False)
        signal.set_wakeup_fd(wake, warn_on_full_buffer=False)
        selector.register(woken, selectors.EVENT_READ, None)
        parent = os.getppid()
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        while not self.stopping and os.getppid() == parent:  # (a parent killed leaves no worker behind)
            if self.reload:
                self.reload = False
                with self.service._judging:
                    self.service.fresh(forced=True)
            if not self.slots.acquire(timeout=0.5):
                continue
            if not self._accepted(selector.select(timeout=0.5)):
                self.slots.release()
        for listener in self.listeners:
            listener.close()
        for thread in list(self.threads):
            thread.join()
        return 0

    def _stop(self):
        self.stopping = self.service.stopping = True  # (a protocol idle between requests ends at once)

    def _accepted(self, ready):
        """Accept one connection of the listeners `ready` and start its thread (True), or none
        (another worker took it, or its peer is refused)."""
        for key, _ in ready:
            listener = key.data
            if listener is None:  # (the wake-up pipe)
                os.read(key.fd, 512)
                continue
            try:
                connection, peer = listener.socket.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                continue
            except OSError as e:  # (out of descriptors: said, and tried again after a pause)
                self.service.say(f"cannot accept on {listener.text} ({e.strerror or e})")
                time.sleep(0.1)
                continue
            client = client_name(peer)
            if not peer_allowed(peer, self.networks):
                self.service.say(f"{client} refused (not in --allowed-ips)")
                connection.close()
                continue
            thread = threading.Thread(target=self._answered, args=(listener, connection, client), daemon=True)
            self.threads.add(thread)
            thread.start()
            return True
        return False

    def _answered(self, listener, connection, client):
        try:
            connection.setblocking(True)
            timeout = self.timeout and (
                max(self.timeout, MILTER_IDLE) if listener.protocol == "milter" else self.timeout
            )
            connection.settimeout(timeout or None)  # (0: no timeout)
            self.service.started()
            listener.answer(connection, self.service, client)
        except Exception as e:  # a fault of nbtext's: said in one line, the connection closed, the worker goes on
            unless_signal(e)
            self.service.say(f"{client} {listener.protocol}: cannot answer ({e.__class__.__name__}: {e})")
        finally:
            connection.close()
            self.threads.discard(threading.current_thread())
            self.slots.release()
            _trimmed()


class Server:
    """The parent: the listeners bound, the model loaded, the workers forked and kept. It
    checks the model file too (every POLL seconds): when it changed, it loads it and forks new
    workers in place of the old ones, which finish their requests and end. Each worker loads a
    changed file itself before its next request (so that it answers by it at once), but
    that copy is its own: the new workers share the parent's again."""

    def __init__(self, listeners, service, workers, networks, timeout, max_connections):
        self.listeners, self.service, self.networks, self.timeout = listeners, service, networks, timeout
        self.workers, self.slots = workers, max(1, -(-max_connections // workers))
        self.children = {}  # pid -> start time
        self.retiring = set()  # workers told to end: not replaced
        self.renewal, self.renewed_at = False, time.monotonic()  # (a model loaded since the workers were forked)
        self.stopping = self.reload = False

    def run(self):
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, lambda number, frame: setattr(self, "reload", True))
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # (a client gone is an error of its send, not a death)
        try:
            for _ in range(self.workers):
                self._fork()
            while not self.stopping:
                time.sleep(POLL)
                forced, self.reload = self.reload, False
                self.renewal |= self.service.fresh(forced)
                if self.renewal and time.monotonic() - self.renewed_at >= RENEWAL_PAUSE:
                    self._renewed()
                self._replace_the_dead()
        finally:
            for listener in self.listeners:
                listener.close()  # (no new connection waits for a worker that will not take it)
            self._signal_workers(signal.SIGTERM)
            while self.children:
                try:
                    pid, _ = os.wait()
                except ChildProcessError:
                    break
                except InterruptedError:
                    continue
                self.children.pop(pid, None)
            for listener in self.listeners:
                listener.close(unlink=True)
        self.service.say("stopped")
        return 0

    def _stop(self, number, frame):
        self.stopping = True

    def _renewed(self):
        """New workers forked with the model loaded now; the old ones finish and end."""
        self.renewal, self.renewed_at = False, time.monotonic()
        old = list(self.children)
        for _ in range(self.workers):
            self._fork()
        for pid in old:
            self.retiring.add(pid)
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def _signal_workers(self, number):
        for pid in list(self.children):
            try:
                os.kill(pid, number)
            except ProcessLookupError:
                pass

    def _fork(self):
        sys.stderr.flush()
        # the parent's objects (the model) moved out of the collector's reach: a worker's
        # collections then write no reference counts into the pages it shares with the parent
        # (those frozen at the last fork given back first: a model replaced since is collected)
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        # signals held over the fork: the child sets its own handlers before it takes one
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING_SIGNALS)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                status = Worker(self.listeners, self.service, self.networks, self.timeout, self.slots).run(held)
            except BaseException as e:
                self.service.say(f"worker {os.getpid()} failed ({e.__class__.__name__}: {e})")
            finally:
                try:
                    sys.stderr.flush()
                finally:
                    os._exit(status)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        self.children[pid] = time.monotonic()

    def _replace_the_dead(self):
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            started = self.children.pop(pid, None)
            if started is None or self.stopping or pid in self.retiring:
                self.retiring.discard(pid)
                continue
            how = (
                f"signal {os.WTERMSIG(status)}"
                if os.WIFSIGNALED(status)
                else f"status {os.waitstatus_to_exitcode(status)}"
            )
            self.service.say(f"worker {pid} ended ({how}): replaced")
            if time.monotonic() - started < RESPAWN_PAUSE:
                time.sleep(RESPAWN_PAUSE)  # (a worker that cannot start is not restarted in a tight loop)
            self._fork()


def serve(
    model_path,
    addresses,
    socket_mode=None,
    allowed_ips=None,
    workers=choices.SERVE_WORKERS,
    max_connections=choices.SERVE_MAX_CONNECTIONS,
    timeout=choices.SERVE_TIMEOUT,
    milter_action="tag",
    **service_options,
):
    """Run the server until SIGTERM or SIGINT: `addresses` [(ADDRESS, protocol)] with protocol
    "spamd" (--listen) or "milter" (--milter, whose spam is handled by `milter_action`: tag,
    quarantine or reject); exit status 0 once stopped. The model and every address are checked
    before the first worker starts: an NbtextError says what is wrong."""
    answers = {"spamd": _spamd_answer, "milter": lambda: _milter_answer(milter_action)}
    if not 1 <= workers <= choices.SERVE_MAX_WORKERS:
        raise NbtextError(f"--workers: from 1 to {choices.SERVE_MAX_WORKERS}")
    networks = allowed_networks(allowed_ips or ",".join(DEFAULT_ALLOWED))
    service = Service(model_path, **service_options)
    listeners = [Listener(text, answers[protocol](), protocol, socket_mode) for text, protocol in addresses]
    try:
        for listener in listeners:
            bound = listener.bind()
            service.say(f"listening on {bound} ({listener.protocol})")
    except BaseException:
        for listener in listeners:
            listener.close(unlink=True)
        raise
    service.say(f"serving {model_path} ({', '.join(service.classes)}) with {workers} worker{'s' * (workers != 1)}")
    return Server(listeners, service, workers, networks, timeout, max_connections).run()


def _spamd_answer():
    from nbtext.delivery.spamd import answer

    return answer


def _milter_answer(action):
    from nbtext.delivery.milter import ACTIONS, answer

    if action not in ACTIONS:
        raise NbtextError(f"--milter-action {action!r}: one of {', '.join(ACTIONS)}")
    return lambda connection, service, client: answer(connection, service, client, action)


def _trimmed():
    """The memory the C allocator holds free given back to the system (glibc's malloc_trim):
    what a message's work freed is not kept, page by page, in each worker."""
    libc = _libc()
    if libc:
        libc.malloc_trim(0)


def _one_allocator_arena():
    """glibc's allocator keeps one arena for all of a worker's threads (mallopt M_ARENA_MAX 1),
    not one more for each thread that answers a connection at once: the threads take turns
    under Python's lock anyway, and each arena kept its own free pages."""
    libc = _libc()
    if libc:
        libc.mallopt(-8, 1)  # (M_ARENA_MAX, malloc.h)


def _libc():
    """glibc, by ctypes, or False where there is none (its allocator's calls are then skipped)."""
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes

            _LIBC = ctypes.CDLL("libc.so.6")
            _LIBC.malloc_trim, _LIBC.mallopt  # noqa: B018 (both there, or neither is used)
        except (OSError, AttributeError):
            _LIBC = False
    return _LIBC


_LIBC = None
