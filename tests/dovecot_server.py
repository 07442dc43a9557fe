"""A Dovecot of the tests' own on 127.0.0.1 (tests/test_dovecot.py): its configuration written
into a temporary folder, including contrib/dovecot/90-nbtext.conf and the Sieve scripts beside
it as shipped (only the folder they name is changed), free ports chosen when it starts, one user
of the unprivileged uid 65534 (nobody), and the server stopped by its PID. Nothing here starts on
import."""

import imaplib
import os
import shutil
import signal
import smtplib
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "contrib" / "dovecot"
SHIPPED_FOLDER = "/etc/dovecot/nbtext"  # where 90-nbtext.conf says the scripts and bin/ are
NBTEXT = Path(sys.executable).with_name("nbtext")
MAIL_UID = MAIL_GID = 65534  # nobody, nogroup
USER, PASSWORD = "alice", "secret"
SENDER = "sender@example.org"

# What each Debian package brings that the tests need.
PACKAGE_FILES = {
    "dovecot-core": ["/usr/sbin/dovecot", "/usr/lib/dovecot/dovecot-lda"],
    "dovecot-imapd": ["/usr/lib/dovecot/imap"],
    "dovecot-lmtpd": ["/usr/lib/dovecot/lmtp"],
    "dovecot-sieve": [
        "/usr/lib/dovecot/modules/lib90_sieve_plugin.so",
        "/usr/lib/dovecot/modules/lib95_imap_sieve_plugin.so",
        "/usr/lib/dovecot/modules/sieve/lib90_sieve_extprograms_plugin.so",
    ],
}


def missing_packages():
    """None when the Dovecot packages the tests need are installed, else one line naming them."""
    missing = [name for name, files in PACKAGE_FILES.items() if not all(map(os.path.exists, files))]
    if missing:
        return (
            f"no Dovecot here: the tests need the packages {' '.join(missing)} (apt-get install -y "
            "dovecot-imapd dovecot-lmtpd dovecot-sieve)"
        )
    if os.geteuid() != 0:
        return "the Dovecot tests start dovecot as root: run them as root"
    if not NBTEXT.exists():
        return f"the Dovecot tests need nbtext installed beside {sys.executable} (make install)"
    return None


def mail_user_cannot_run_nbtext():
    """None when the mail user (uid MAIL_UID) can run the installed nbtext, else why not."""
    try:
        subprocess.run(
            [NBTEXT, "--version"],
            user=MAIL_UID,
            group=MAIL_GID,
            extra_groups=[],
            cwd="/",
            capture_output=True,
            check=True,
            timeout=60,
        )
    except (subprocess.CalledProcessError, OSError) as e:
        return f"uid {MAIL_UID} cannot run {NBTEXT}: {e}"
    return None


def running_children(pid):
    """The processes whose parent is `pid` that have not ended (an ended one its parent has not
    waited for yet, a zombie, is left out)."""
    running = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):  # (not a process, or one that ended meanwhile)
            continue
        state, parent = stat.rpartition(")")[2].split()[:2]
        if int(parent) == pid and state != "Z":
            running.append(int(entry.name))
    return running


def process_name(pid):
    """A running process's name (/proc/PID/comm), or None where it has ended."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


class Dovecot:
    """dovecot -F -c CONFIG, its PID kept. Its files (the configuration, the passwd file, its
    run and state folders, the log, the shipped scripts, the user's home) are in a folder of
    their own that Dovecot's unprivileged processes reach: a pytest tmp_path lies below a
    folder only root may enter. It is removed when the server stops; the log is copied to
    tmp_path first."""

    def __init__(self, tmp_path):
        self.keep = Path(tmp_path)
        self.world = Path(tempfile.mkdtemp(prefix="nbtext-dovecot-"))
        self.world.chmod(0o755)
        self.scripts = self.world / "nbtext"
        self.home = self.world / "home" / USER
        self.model = self.home / ".nbtext" / "mail.model"
        self.log = self.world / "dovecot.log"
        self.process = None
        self.seen = set()

    def install(self, model_source, service=False):
        """The shipped files where the configuration names them, the nbtext link, the user's
        home with a copy of `model_source` as their model (all the mail user's own)."""
        (self.scripts / "bin").mkdir(parents=True)
        for f in SHIPPED.iterdir():
            text = f.read_text()
            changes = {SHIPPED_FOLDER: str(self.scripts)}
            if f.name == "nbtext-service.conf":  # the users it names, as they are here
                changes.update({"user = nbtext": "user = root", "user = vmail": "user = nobody"})
            for old, new in changes.items():
                assert old in text or f.suffix == ".sieve", f"{f.name} no longer says {old!r}"
                text = text.replace(old, new)
            (self.scripts / f.name).write_text(text)
        self.service = service
        (self.scripts / "bin" / "nbtext").symlink_to(NBTEXT)
        self.model.parent.mkdir(parents=True)
        if model_source is not None:
            shutil.copy(model_source, self.model)
        for path in [self.home.parent, *self.home.parent.rglob("*")]:
            os.chown(path, MAIL_UID, MAIL_GID)

    def start(self, extra="", tls=False, users=()):
        """Start the server; with `tls`, it serves imaps (and STARTTLS) with a certificate
        for 127.0.0.1 and localhost made now (self.certificate: the file a client trusts).
        `users`: (user, password) pairs it knows beside USER."""
        self.imap_port, self.lmtp_port = free_port(), free_port()
        self.imaps_port = free_port() if tls else 0
        if tls:
            self.certificate, key = self.world / "cert.pem", self.world / "key.pem"
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost"]
                + ["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", self.certificate],
                check=True,
                capture_output=True,
            )
        (self.world / "passwd").write_text(
            "".join(f"{user}:{{PLAIN}}{secret}\n" for user, secret in [(USER, PASSWORD), *users])
        )
        config = self.world / "dovecot.conf"
        config.write_text(f"""\
base_dir = {self.world}/run
state_dir = {self.world}/state
log_path = {self.log}
protocols = imap lmtp
listen = 127.0.0.1
{f"ssl = yes{chr(10)}ssl_cert = <{self.certificate}{chr(10)}ssl_key = <{key}" if tls else "ssl = no"}
disable_plaintext_auth = no
auth_mechanisms = plain
auth_failure_delay = 0
mail_location = maildir:~/Maildir
lmtp_add_received_header = no
lmtp_hdr_delivery_address = none
namespace inbox {{
  inbox = yes
  separator = /
  mailbox Junk {{
    special_use = \\Junk
    auto = create
  }}
  mailbox Trash {{
    special_use = \\Trash
    auto = create
  }}
}}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {self.world}/passwd
}}
userdb {{
  driver = static
  args = uid={MAIL_UID} gid={MAIL_GID} home={self.world}/home/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.imap_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {self.imaps_port}
  }}
}}
service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {self.lmtp_port}
  }}
}}
# (no penalty for failed logins from an address: a test's logins refused on purpose delayed each later
# one from 127.0.0.1 by 2, 4, 8 then 15 seconds)
service anvil {{
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
service pop3-login {{
  inet_listener pop3 {{
    port = 0
  }}
  inet_listener pop3s {{
    port = 0
  }}
}}
!include {self.scripts}/90-nbtext.conf
{f"!include {self.scripts}/nbtext-service.conf" if self.service else ""}
{extra}
""")
        (self.world / "run").mkdir(exist_ok=True)
        with open(self.world / "dovecot.out", "wb") as said:
            self.process = subprocess.Popen(
                ["dovecot", "-F", "-c", str(config)], stdin=subprocess.DEVNULL, stdout=said, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 30
        for port in (self.imap_port, self.lmtp_port):
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"dovecot ended: {(self.world / 'dovecot.out').read_text()}{self.log_text()}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        # Global Sieve scripts are compiled by root beforehand (the mail user may not write
        # beside them), as docs/mail.md tells an administrator to.
        subprocess.run(["sievec", "-c", str(config), str(self.scripts)], check=True, capture_output=True)
        return self

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # by its PID: the master ends its children
            # (its log process the last: the master tells it to end, then sleeps a second before it exits, and
            # the log process takes a second more: two seconds of every test's. Once the log process is all that
            # runs, the other processes' lines written, both are killed by their PIDs.)
            deadline = time.monotonic() + 30
            while self.process.poll() is None and time.monotonic() < deadline:
                running = running_children(self.process.pid)
                if all(process_name(child) in ("log", None) for child in running):
                    self.process.kill()
                    for child in running:
                        try:
                            os.kill(child, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    break
                time.sleep(0.01)
            try:
                self.process.wait(timeout=max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.log.exists():
            shutil.copy(self.log, self.keep / "dovecot.log")
        shutil.rmtree(self.world, ignore_errors=True)

    def log_text(self):
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def deliver(self, message, via="lmtp"):
        """One message to the user through LMTP, in CRLF lines as SMTP has them (smtplib sends
        bytes as they are, and would end LF lines with one more line), or through the LDA
        (dovecot-lda, started as an MTA's mailbox command is)."""
        if via == "lda":
            subprocess.run(
                ["/usr/lib/dovecot/dovecot-lda", "-c", str(self.world / "dovecot.conf"), "-d", USER, "-f", SENDER],
                input=message,
                check=True,
                timeout=120,
            )
            return
        with smtplib.LMTP("127.0.0.1", self.lmtp_port, timeout=60) as lmtp:
            refused = lmtp.sendmail(SENDER, [USER], message.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
        assert not refused, refused

    def imap(self):
        client = imaplib.IMAP4("127.0.0.1", self.imap_port, timeout=60)
        client.login(USER, PASSWORD)
        return client

    def append(self, folder, messages):
        """Put `messages` (bytes, LF or CR LF lines) into `folder` over IMAP (APPEND, no
        flags), creating the folder if it is missing; the UIDs they got."""
        client = self.imap()
        client.create(folder)  # (NO if it exists)
        for message in messages:
            answer = client.append(folder, None, None, message.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
            assert answer[0] == "OK", answer
        assert client.select(folder)[0] == "OK"
        _, found = client.uid("SEARCH", None, "ALL")
        client.logout()
        return [int(uid) for uid in found[0].split()][-len(messages) :] if messages else []

    def move(self, client, message, source, target, how="MOVE"):
        """Move the message of these stored bytes from folder `source` to `target` over IMAP:
        with MOVE, or (how="COPY") as a client without MOVE does, COPY, then UID STORE
        \\Deleted and EXPUNGE in the source folder."""
        uid = self.uid_of(client, source, message)
        if how == "MOVE":
            answer = client.uid("MOVE", uid, target)
        else:
            answer = client.uid("COPY", uid, target)
            assert answer[0] == "OK", answer
            answer = client.uid("STORE", uid, "+FLAGS.SILENT", r"(\Deleted)")
            assert answer[0] == "OK", answer
            answer = client.expunge()
        assert answer[0] == "OK", answer

    @staticmethod
    def uid_of(client, folder, message):
        """Select `folder` and find the UID of the message of these stored (LF) bytes in it."""
        assert client.select(folder)[0] == "OK"
        over_imap = message.replace(b"\n", b"\r\n")
        _, found = client.uid("SEARCH", None, "ALL")
        for uid in found[0].split():
            _, fetched = client.uid("FETCH", uid, "(BODY.PEEK[])")
            if fetched[0][1] == over_imap:
                return uid
        raise AssertionError(f"no such message in {folder}")

    def last_delivered(self):
        """(the folder, the bytes) of the message delivered last (every other one was seen)."""
        new = [(name, p) for name in ("INBOX", "Junk") for p in self.folder(name) if p not in self.seen]
        assert len(new) == 1, new
        self.seen.add(new[0][1])
        return new[0][0], new[0][1].read_bytes()

    def folder(self, name):
        """The user's Maildir folder NAME's message files (INBOX is the Maildir itself)."""
        maildir = self.home / "Maildir"
        folder = maildir if name == "INBOX" else maildir / f".{name}"
        return sorted(p for sub in ("cur", "new") if (folder / sub).exists() for p in (folder / sub).iterdir())


class LoopbackProxy:
    """A TCP proxy on 127.0.0.1 in front of a server's `port` (self.port: its own): each
    connection accepted is joined to a new one to the server by `join(near, far)`, which a
    proxy says (its threads). Set a subclass's own attributes before calling this __init__:
    connections are accepted from then on."""

    def __init__(self, port):
        import socket
        import threading

        self.upstream = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepting = threading.Thread(target=self.serve, daemon=True)
        self.accepting.start()

    def serve(self):
        import socket

        while True:
            try:
                near, _ = self.listener.accept()
            except OSError:  # (closed)
                return
            self.join(near, socket.create_connection(("127.0.0.1", self.upstream)))

    def join(self, near, far):
        raise NotImplementedError

    def close(self):
        """Stop accepting, then close: a listener closed while its thread waits in accept() left
        that thread waiting on a descriptor number the next test's server may be given (it took
        a connection meant for that server, which then hung); shutdown wakes it first."""
        import socket

        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.accepting.join(5)
        self.listener.close()
