"""A Postfix of the tests' own on 127.0.0.1 (tests/test_milter.py): its main.cf and master.cf
written into a temporary folder (its own config, queue and data directories, no chroot, no
service of the system's), SMTP on a free port, the milter named by the test, and one user,
alice@nbtext.test, whose mail virtual(8) delivers into a Maildir as uid 65534 (nobody). The
master runs in the foreground (`postfix start-fg`), its PID kept; it is stopped by
`postfix stop` and by that PID. Nothing here starts on import."""

import os
import shutil
import smtplib
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from conftest import free_port

POSTFIX = "/usr/sbin/postfix"
DOMAIN = "nbtext.test"
RECIPIENT = f"alice@{DOMAIN}"
SENDER = "sender@example.org"
MAIL_UID = MAIL_GID = 65534  # nobody, nogroup

# The Postfix services the tests use, none chrooted (a fresh queue directory holds no chroot's files).
MASTER_CF = """\
127.0.0.1:{port} inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
virtual   unix  -       n       n       -       -       virtual
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
"""


def missing_postfix():
    """None when this Postfix can run here, else one line saying why not."""
    if not os.path.exists(POSTFIX):
        return (
            "no Postfix here: the milter's end-to-end tests need the package postfix "
            "(DEBIAN_FRONTEND=noninteractive apt-get install -y postfix)"
        )
    if os.geteuid() != 0:
        return "the milter's end-to-end tests start Postfix as root: run them as root"
    import grp
    import pwd

    try:
        pwd.getpwnam("postfix"), grp.getgrnam("postdrop")
    except KeyError:
        return "Postfix's user postfix or group postdrop is missing (the package makes them)"
    return None


class Postfix:
    """postfix -c CONFIG start-fg, the master's PID kept; its files in a folder of their own
    (removed when it stops, the mail log copied to `keep` first)."""

    def __init__(self, keep):
        self.keep = Path(keep)
        self.world = Path(tempfile.mkdtemp(prefix="nbtext-postfix-"))
        self.world.chmod(0o755)
        self.config = self.world / "etc"
        self.maildir = self.world / "mail" / "alice"
        self.log = self.world / "maillog"
        self.process = None
        self.seen = set()

    def start(self, milter_port, default_action="tempfail", extra=""):
        """Start Postfix with the milter on 127.0.0.1:`milter_port` and `default_action` as its
        milter_default_action (what it does when the milter cannot be reached)."""
        self.port = free_port()
        self.config.mkdir()
        for name in ("spool", "data", "mail"):
            (self.world / name).mkdir()
        shutil.chown(self.world / "data", "postfix")
        os.chown(self.world / "mail", MAIL_UID, MAIL_GID)
        (self.config / "master.cf").write_text(MASTER_CF.format(port=self.port))
        (self.config / "main.cf").write_text(f"""\
compatibility_level = 3.6
queue_directory = {self.world}/spool
data_directory = {self.world}/data
maillog_file_prefixes = {self.world}
maillog_file = {self.log}
mail_owner = postfix
setgid_group = postdrop
myhostname = mx.{DOMAIN}
mydomain = {DOMAIN}
myorigin = {DOMAIN}
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtputf8_enable = no
local_header_rewrite_clients =
alias_maps =
alias_database =
virtual_mailbox_domains = {DOMAIN}
virtual_mailbox_base = {self.world}/mail
virtual_mailbox_maps = inline:{{ {RECIPIENT}=alice/ }}
virtual_uid_maps = static:{MAIL_UID}
virtual_gid_maps = static:{MAIL_GID}
smtpd_milters = inet:127.0.0.1:{milter_port}
milter_default_action = {default_action}
{extra}
""")
        subprocess.run([POSTFIX, "-c", self.config, "set-permissions"], check=True, capture_output=True, timeout=60)
        with open(self.world / "postfix.out", "wb") as said:
            self.process = subprocess.Popen(
                [POSTFIX, "-c", self.config, "start-fg"],
                stdin=subprocess.DEVNULL,
                stdout=said,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"postfix ended: {(self.world / 'postfix.out').read_text()}{self.log_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        return self

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            subprocess.run([POSTFIX, "-c", self.config, "stop"], capture_output=True, timeout=60)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()  # by its PID
                self.process.wait()
        if self.log.exists():
            shutil.copy(self.log, self.keep / "maillog")
        shutil.rmtree(self.world, ignore_errors=True)

    def log_text(self):
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def session(self):
        return smtplib.SMTP("127.0.0.1", self.port, timeout=120)

    def send(self, message, smtp=None):
        """One message to alice over SMTP, in CR LF lines as SMTP has them: in a session of its
        own, or in `smtp` (a session)."""
        if smtp is None:
            with self.session() as smtp:
                return self.send(message, smtp)
        refused = smtp.sendmail(SENDER, [RECIPIENT], message.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
        assert not refused, refused

    def delivered(self, timeout=60):
        """The bytes of the next message delivered into alice's Maildir (waiting for it)."""
        deadline = time.monotonic() + timeout
        while True:
            new = [p for sub in ("new", "cur") if (self.maildir / sub).exists() for p in (self.maildir / sub).iterdir()]
            new = [p for p in new if p.name not in self.seen]
            if new:
                assert len(new) == 1, new
                self.seen.add(new[0].name)
                return new[0].read_bytes()
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing delivered in {timeout} s:\n{self.log_text()}")
            time.sleep(0.05)

    def held(self):
        """The queue IDs of the messages in the hold queue (a milter's quarantine)."""
        hold = self.world / "spool" / "hold"
        return sorted(p.name for p in hold.rglob("*") if p.is_file()) if hold.exists() else []

    def queued_message(self, queue_id):
        """The header and body of a queued message (postcat)."""
        return subprocess.run(
            ["postcat", "-c", self.config, "-bh", "-q", queue_id], check=True, capture_output=True, timeout=60
        ).stdout
