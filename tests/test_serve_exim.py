"""Exim's `spam =` ACL condition (Debian's exim4-daemon-heavy) against `nbtext serve`, end to
end: an Exim of the test's own (its configuration written here: a daemon on a free 127.0.0.1
port, spamd_address the server's, an acl_smtp_data that adds $spam_score and $spam_bar or
denies spam, local delivery to a file a recipient) is sent real SpamAssassin messages over
SMTP. Exim's verdict is `nbtext predict`'s, and $spam_score the SCORE of the server's own CHECK.

Both started and stopped by their PIDs. Skipped, saying why, where no Exim with `spam =` runs.
Debian's exim4-daemon-heavy (exim4-daemon-light has no content scanning) conflicts with Postfix
(which the milter's tests use), so CI unpacks it instead of installing it: `.ci/unpack-exim`
downloads it and the packages this machine lacks for it and `dpkg -x`s them into build/exim
(and adds the user Debian-exim). The Exim run is $NBTEXT_TEST_EXIM, else that folder's
usr/sbin/exim4, else exim4 on PATH; an unpacked one's library folders are put on the library
path of every Exim process, through exim_path."""

import os
import pwd
import re
import shutil
import smtplib
import socket
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, free_port, stopped
from test_serve import Served, asked, corpus, parsed, predicted, request, sa_model, sample  # noqa: F401, F811

UNPACKED = ROOT / "build" / "exim"  # where .ci/unpack-exim puts Debian's exim4-daemon-heavy


def chosen_exim():
    """The Exim binary the test runs: $NBTEXT_TEST_EXIM, else the unpacked one, else the one on
    PATH (None: there is none)."""
    if os.environ.get("NBTEXT_TEST_EXIM"):
        return os.environ["NBTEXT_TEST_EXIM"]
    if (UNPACKED / "usr" / "sbin" / "exim4").exists():
        return str(UNPACKED / "usr" / "sbin" / "exim4")
    return shutil.which("exim4") or shutil.which("exim")


EXIM = chosen_exim()


def library_folders(binary):
    """The folders of an Exim unpacked by dpkg -x (ROOT/usr/sbin/exim4) that hold libraries
    (none for an installed one)."""
    root = Path(binary).resolve().parent.parent.parent
    if Path(binary).resolve().parent == Path("/usr/sbin"):
        return []
    multiarch = sysconfig.get_config_var("MULTIARCH")
    folders = [root / top / below for top in ("usr/lib", "lib") for below in filter(None, [multiarch, "."])]
    return [f for f in folders if any(f.glob("*.so*"))]


def library_path(folders):
    """`folders` before the library path already set."""
    return ":".join([*map(str, folders), *filter(None, [os.environ.get("LD_LIBRARY_PATH")])])


def exim_user(binary):
    """The user Exim's binary runs as (its exim_user), or why it cannot run `spam =` here
    (`binary` runs EXIM, which the reasons name)."""
    try:
        version = subprocess.run([binary, "-C", "/dev/null", "-bV"], capture_output=True, timeout=30)
        result = subprocess.run([binary, "-C", "/dev/null", "-bP", "exim_user"], capture_output=True, timeout=30)
    except OSError as e:
        return None, f"{EXIM}: {e}"
    found = re.search(rb"exim_user = (\S+)", result.stdout)
    if result.returncode != 0 or not found:
        said = " ".join((result.stderr or result.stdout).decode(errors="replace").split())
        return None, f"{EXIM} does not run: {said}"
    if not re.search(rb"^Support for:.* Content_Scanning", version.stdout, re.M):
        return (
            None,
            f"{EXIM} has no content scanning (`spam =`): Debian's exim4-daemon-heavy has it (.ci/unpack-exim)",
        )
    return found.group(1).decode(), None


ACL = r"""
begin acl

accept_rcpt:
  accept

judged:
  deny    condition = ${if match{$recipients}{\N^deny-\N}}
          spam = nobody
          message = spam ($spam_score)
  warn    spam = nobody:true
          add_header = X-Spam-Score: $spam_score
          add_header = X-Spam-Bar: $spam_bar
  warn    spam = nobody
          add_header = X-Spam-Flag: YES
  accept
"""


class Exim:
    """`exim -C CONFIG -bdf` (a daemon in the foreground, its PID kept) asking spamd on
    `spamd_port`, delivering each recipient's mail to a file named by its local part. Its
    files are in a folder of their own that Exim's unprivileged processes reach (a pytest
    tmp_path lies below a folder only root may enter), removed when it stops."""

    def __init__(self, spamd_port):
        self.world = Path(tempfile.mkdtemp(prefix="nbtext-exim-"))
        self.world.chmod(0o755)
        # every Exim process Exim starts (a delivery, say) runs exim_path, with an environment
        # it has cleared: the library path of an unpacked Exim goes through this script, to a
        # copy without the set-user-ID bit (the loader ignores the path for a set-user-ID
        # program that a process of exim_user starts), and to copies of its libraries here (a
        # process of exim_user may not reach the checkout: in root's 0700 home folder, say)
        wrapper, libraries = Path(EXIM), library_folders(EXIM)
        if library_path(libraries):
            binary, wrapper, copies = self.world / "exim4", self.world / "exim", self.world / "lib"
            shutil.copyfile(EXIM, binary)
            binary.chmod(0o755)
            copies.mkdir()
            for library in (library for folder in libraries for library in sorted(folder.glob("*.so*"))):
                if not (copies / library.name).exists():
                    shutil.copyfile(library, copies / library.name)
            wrapper.write_text(
                f'#!/bin/sh\nexport LD_LIBRARY_PATH="{library_path([copies] if libraries else [])}"\n'
                f'exec "{binary}" "$@"\n'
            )
            wrapper.chmod(0o755)
        user, why = exim_user(wrapper)
        if user is None:
            shutil.rmtree(self.world)
            pytest.skip(why)
        if os.geteuid() != 0:
            # (Exim started by another user cannot change user: it runs as that user, who
            # then is its exim_user and the user of its deliveries; its user must exist all
            # the same, as Exim looks it up when it starts)
            user = pwd.getpwuid(os.geteuid()).pw_name
        owner = pwd.getpwnam(user)
        for folder in ("spool", "log", "mail"):
            (self.world / folder).mkdir()
            os.chown(self.world / folder, owner.pw_uid, owner.pw_gid)
        self.port, self.mail = free_port(), self.world / "mail"
        config, local_parts = self.world / "exim.conf", self.world / "local_parts"
        # (a file named by $local_part_data: Exim takes no file name from what a client sent)
        local_parts.write_text("".join(f"{kind}-{i}: {kind}-{i}\n" for kind in ("warn", "deny") for i in range(100)))
        config.write_text(
            f"primary_hostname = nbtext.test\n"
            f"exim_path = {wrapper}\n"
            f"exim_user = {user}\nexim_group = {owner.pw_gid}\n"
            f"local_interfaces = 127.0.0.1\n"
            f"daemon_smtp_ports = {self.port}\n"
            f"spool_directory = {self.world / 'spool'}\n"
            f"log_file_path = {self.world / 'log'}/%slog\n"
            f"pid_file_path = {self.world / 'exim.pid'}\n"
            f"spamd_address = 127.0.0.1 {spamd_port}\n"
            "acl_smtp_rcpt = accept_rcpt\n"
            "acl_smtp_data = judged\n"
            "host_lookup =\n"
            "tls_advertise_hosts =\n"
            # no Received line: with one, the server's score of the copy delivered differed
            # now and then from Exim's $spam_score of the same message (1 run in 3), so the
            # line Exim scanned is not always the line it delivers
            "received_header_text =\n"
            f"{ACL}\n"
            "begin routers\n\nmailbox:\n  driver = accept\n"
            f"  local_parts = lsearch;{local_parts}\n  transport = to_file\n\n"
            "begin transports\n\nto_file:\n  driver = appendfile\n"
            f"  file = {self.mail}/$local_part_data\n  user = {user}\n  mode = 0600\n"
            # the message as it was scanned, whole: no From line before it, no line escaped
            "  message_prefix =\n  message_suffix =\n  check_string =\n  escape_string =\n"
        )
        with open(self.world / "log" / "stderr", "wb") as stderr:
            self.process = subprocess.Popen(
                [str(wrapper), "-C", str(config), "-bdf"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                    if s.recv(512).startswith(b"220"):
                        break
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = self.log()
                self.stop()
                pytest.fail(f"Exim did not start: {log}")
            time.sleep(0.1)

    def log(self):
        return "".join(p.read_text(errors="replace") for p in sorted((self.world / "log").glob("*")))

    def delivered(self, local_part, timeout=60):
        """The message delivered to `local_part` (its mailbox file holds one)."""
        path = self.mail / local_part
        deadline = time.monotonic() + timeout
        while "Completed" not in self.log().split(f"{local_part}@", 1)[-1]:
            assert time.monotonic() < deadline, f"nothing delivered to {local_part}: {self.log()}"
            time.sleep(0.1)
        return path.read_bytes()

    def stop(self):
        stopped(self.process)
        shutil.rmtree(self.world, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


needs_exim = pytest.mark.skipif(
    EXIM is None,
    reason="no Exim here (.ci/unpack-exim unpacks Debian's exim4-daemon-heavy into build/exim; or install it, or name"
    " one by $NBTEXT_TEST_EXIM)",
)


def as_sent(path):
    """The message of a corpus file as an SMTP client sends it: without the mbox From line the
    files begin with (which Exim would take for the first line of a body with no header)."""
    message = path.read_bytes()
    return message.split(b"\n", 1)[1] if message.startswith(b"From ") else message


def sent(exim, recipient, message):
    """The SMTP status of `message` sent to `recipient`: 250, or the code of its refusal."""
    with smtplib.SMTP("127.0.0.1", exim.port, timeout=60) as smtp:
        try:
            smtp.sendmail("sender@nbtext.test", [recipient], message)
        except smtplib.SMTPDataError as e:
            return e.smtp_code
    return 250


def checked_score(port, message):
    """SCORE of the server's own answer to CHECK (its Spam: header), and whether it says spam."""
    status, headers, _ = parsed(asked(port, request("CHECK", message)))
    assert status.endswith(" 0 EX_OK"), status
    found = re.fullmatch(r"(True|False) ; (-?[\d.]+) / (-?[\d.]+)", headers["Spam"])
    return float(found.group(2)), found.group(1) == "True"


def spam_bar(score, bar):
    """Whether `bar` is Exim's $spam_bar of `score`: a + a point (a - for a negative score), /
    for a score between -1 and 1; at most 50 (51 before Exim 4.97)."""
    points = int(abs(score))
    if points == 0:
        return bar == "/"
    return bar == ("+" if score > 0 else "-") * len(bar) and len(bar) == points or points >= len(bar) >= 50


ADDED = re.compile(rb"^X-Spam-(Score|Bar|Flag): (.*)\n", re.M)


@needs_exim
def test_exim_spam_condition(sa_model, corpus, tmp_path):  # noqa: F811 (the fixtures of test_serve)
    """Exim's `spam = nobody` is true exactly when predict says spam of the message Exim
    scanned (the one delivered, without the lines its ACL added: X-Spam-Flag then), and refused
    with 550 by `deny spam = nobody`; $spam_score is the SCORE of the server's own CHECK of that
    message, as Exim shows it (one decimal), and $spam_bar Exim's bar of it."""
    _, test = corpus
    paths = sample(test / "spam", 6, 200) + sample(test / "ham", 6, 200)
    scanned = tmp_path / "scanned"
    scanned.mkdir()
    added = {}
    with Served(sa_model, tmp_path) as served, Exim(served.port) as exim:
        for i, path in enumerate(paths):
            assert sent(exim, f"warn-{i}@nbtext.test", as_sent(path)) == 250
            delivered = exim.delivered(f"warn-{i}")
            head, blank, body = delivered.partition(b"\n\n")
            added[i] = {m.group(1).decode(): m.group(2).decode() for m in ADDED.finditer(head + b"\n")}
            (scanned / str(i)).write_bytes(ADDED.sub(b"", head + b"\n")[:-1] + blank + body)
        for i in range(len(paths)):
            score, says_spam = checked_score(served.port, (scanned / str(i)).read_bytes())
            assert added[i]["Score"] == f"{score:.1f}", paths[i]
            assert spam_bar(score, added[i]["Bar"]), (paths[i], score, added[i]["Bar"])
            assert ("Flag" in added[i]) == says_spam, paths[i]
        labels = predicted(sa_model, [scanned / str(i) for i in range(len(paths))])
        flagged = [("Flag" in added[i]) for i in range(len(paths))]
        assert flagged == [labels[str(scanned / str(i))] == "spam" for i in range(len(paths))]
        assert True in flagged and False in flagged  # (both verdicts met)
        for i, path in enumerate(paths):
            assert sent(exim, f"deny-{i}@nbtext.test", as_sent(path)) == (550 if flagged[i] else 250), path
        log = served.log()
    assert "Traceback" not in log
    assert len(re.findall(r" REPORT ", log)) == 2 * len(paths)  # (Exim asks with REPORT, once a message)
