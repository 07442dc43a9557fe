"""IMAP folders as PATHs: `imap://user@host[:port]/FOLDER` and `imaps://...` (RFC 5092's form,
parsed by nbtext.reading.imapurl), the one reader of this input kind (nbtext.reading.sources
dispatches to it).

A folder is read without changing it: it is opened with EXAMINE (read-only, never SELECT),
its messages listed by UID with their sizes (RFC822.SIZE; read as the lines arrive, no more
UIDs than the server says the folder holds: _Listed) and fetched with BODY.PEEK[] (no
\\Seen flag is set) in batches of the one rule (fetch_batches: at most BATCH messages and
BATCH_BYTES of what they may send), each of at most --max-bytes bytes (a partial fetch: the rest never crosses the
network; a server that sends more anyway has it read and thrown away, and what else it may
send is bounded too: nbtext.reading.imapclient). Each message is named
`imap://user@host/FOLDER/;UID=N` (RFC 5092) and read as the server sends it (CR LF line
ends, which read as LF). A message the server refuses to send is skipped by name; the batch
goes on. One deleted meanwhile (by another client) is left out,
said in a warning line. What the server says is checked as it arrives: a UID outside 1 to
2^32 - 1 or not below its UIDNEXT, a UIDVALIDITY that is no such number, is the run's error (a
lying server: nothing is read, a scan's state is left as it was); its own words (a NO's reason)
reach a message only through `server_text`, without a terminal's control characters.

The password is never on the command line (one inside the URL is refused) and never in a
message: it comes from --password-command CMD (the first line it prints), else
$NBTEXT_IMAP_PASSWORD, else ~/.netrc (`machine HOST login USER password ...`). imaps:// (and
imap:// on a server that offers STARTTLS) verifies the server's certificate and host name
against the system's certificates, or those of --ca-file. Without TLS the password is sent only
where nbtext.reading.imapurl.in_clear_allowed says (loopback, or a host of --plaintext-login),
never to a server that says LOGINDISABLED. --password-command, --ca-file and --plaintext-login
come with the paths, as the command's ImapAccess (nbtext.reading.imapurl). Every failure (no such host,
connection refused, login failed, no such folder, a certificate not trusted) is an
NbtextError of one line. imaplib, ssl and netrc are imported only when a folder is read."""

import os
import re
from array import array
from bisect import bisect_left

from nbtext.choices import DEFAULT_MAX_BYTES
from nbtext.errors import NbtextError
from nbtext.reading.documents import BATCH_BYTES, Document, cut, in_batches
from nbtext.reading.imapurl import (
    DEFAULT_ACCESS,
    LARGEST_UID,
    PASSWORD_VARIABLE,
    PORTS,
    WHERE_PASSWORDS_GO,
    in_clear_allowed,
    parse,
    shown,
)

BATCH = 200  # UIDs fetched in one command, at most (and BATCH_BYTES of their bytes: fetch_batches)
FETCH_MARGIN = 1 << 20  # bytes one FETCH keeps past its batch's bound (fetch_bound): sizes said a little short
TIMEOUT = 60  # seconds a connection may wait for the server
LOGOUT_SECONDS = 1  # seconds a connection's close waits for the answer to LOGOUT (then it is closed anyway)
PASSWORD_COMMAND_VARIABLE = "NBTEXT_IMAP_PASSWORD_COMMAND"
PASSWORD_BYTES = 1 << 16  # what is read of --password-command's output (its first line: the password)
CA_FILE_VARIABLE = "NBTEXT_IMAP_CA_FILE"
LARGEST_PARTIAL = (1 << 32) - 2  # a partial fetch's octet count is a 32-bit number
SHOWN = 200  # characters of the server's own words a message quotes


# --- the password: never on the command line, never in a message -------------------------------
def password(folder, access=DEFAULT_ACCESS):
    """The user's password for `folder`'s server (see the module docstring for where from;
    `access`: the command's ImapAccess)."""
    command = access.password_command or os.environ.get(PASSWORD_COMMAND_VARIABLE)
    if command:
        return _password_of_command(command)
    if os.environ.get(PASSWORD_VARIABLE):
        return os.environ[PASSWORD_VARIABLE]
    found = _netrc_password(folder)
    if found is None:
        raise NbtextError(f"no password for {folder.user} at {folder.shown_host}: {WHERE_PASSWORDS_GO}")
    return found


def _password_of_command(command):
    """The first line --password-command prints (run by the shell; its stderr and stdin are
    the user's, for a passphrase prompt), within what is left of the run's --time-limit (past
    it, the shell is killed and what it started no longer waited for: the run's lock is not held
    behind a prompt a cron line cannot answer). What it prints is never repeated."""
    import signal
    import subprocess

    from nbtext.reading.imapclient import run_time_left

    try:
        running = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE)
    except OSError as e:
        raise NbtextError(f"cannot run the --password-command: {e.strerror or e}") from None
    try:
        printed = _first_line(running.stdout, run_time_left())
        running.stdout.close()  # (what it prints after its first line is not read: `yes pw` ends here)
        status = running.wait(timeout=run_time_left())
    except subprocess.TimeoutExpired:
        running.kill()  # (a command the shell started may hold the pipe on: it is not waited for)
        running.stdout.close()
        running.wait()
        raise NbtextError("the --password-command had not ended when the run's --time-limit was reached") from None
    cut_short = status in (-signal.SIGPIPE, 128 + signal.SIGPIPE) and b"\n" in printed  # (by the pipe closed)
    if status != 0 and not cut_short:
        raise NbtextError(f"the --password-command failed (exit status {status}): no password")
    line = printed.split(b"\n", 1)[0].rstrip(b"\r")
    if not line:
        raise NbtextError("the --password-command printed no password (its first line is empty)")
    return line.decode("utf-8", "surrogateescape")


def _first_line(pipe, seconds):
    """The bytes `pipe` gives up to its first line's end (or its end), at most PASSWORD_BYTES,
    within `seconds` (None: no limit; past it subprocess.TimeoutExpired)."""
    import select
    import subprocess
    import time

    end = None if seconds is None else time.monotonic() + seconds
    read = b""
    while b"\n" not in read and len(read) < PASSWORD_BYTES:
        if end is not None and not select.select([pipe], [], [], max(end - time.monotonic(), 0))[0]:
            raise subprocess.TimeoutExpired("--password-command", seconds)
        piece = os.read(pipe.fileno(), PASSWORD_BYTES)
        if not piece:
            break
        read += piece
    return read


def _netrc_password(folder):
    """The password ~/.netrc ($NETRC) holds for the folder's host and user, or None."""
    import netrc

    path = os.environ.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    if not os.path.exists(path):
        return None
    try:
        entry = netrc.netrc(path).authenticators(folder.host)
    except netrc.NetrcParseError as e:  # (its message may quote a token of the file: a password)
        raise NbtextError(f"cannot read {path}: not a netrc file (line {e.lineno})") from None
    except OSError as e:
        raise NbtextError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:  # (read in the locale's encoding; its message would quote no byte, but say less)
        raise NbtextError(f"cannot read {path}: not text of this machine's encoding") from None
    if entry is None or entry[0] not in (folder.user, None, ""):
        return None
    return entry[2]


# --- the connection ---------------------------------------------------------------------------
class Session:
    """A logged-in connection with the folder open: `with Session(folder) as session:`,
    read-only (EXAMINE) unless `readonly` is False (SELECT: the scan job that moves
    messages), reached with `access` (the command's ImapAccess). `uid_validity`, `exists`
    (how many messages), `uid_next`, `permanent_flags` and `capabilities` are the server's (see
    opened); `client` is the imaplib client; leaving the `with` closes the connection (close:
    logged out only where it is in step). A folder whose URL says ;UIDVALIDITY=N (RFC 5092) is opened
    only where the server says that one: any other is the run's error before anything is read,
    flagged or moved (the one door every reader and imap-scan open a folder by)."""

    def __init__(self, folder, readonly=True, access=DEFAULT_ACCESS):
        self.folder, self.readonly, self.access, self.client = folder, readonly, access, None
        self.kinds_done = set()  # the kinds of command (command_kind) the server has answered OK
        self.lost_in_a_row = 0  # messages whose fetch lost the connection twice, since one came

    def __enter__(self):
        self.client = connect(self.folder, self.access)
        try:
            self.uid_validity, self.exists, self.uid_next, self.permanent_flags = opened(
                self.client, self.folder, self.readonly
            )
            pinned = self.folder.uid_validity  # (the URL's ;UIDVALIDITY=N, RFC 5092: checked before anything)
            if pinned is not None and self.uid_validity != pinned:
                raise NbtextError(
                    f"{self.folder.url}: the folder's UIDVALIDITY is {self.uid_validity or 'not said'}, not the "
                    f"URL's {pinned} (the folder was recreated, or its UIDs renumbered): nothing is read"
                )
            # (imaplib keeps those said before login; a server says more after it: MOVE, UIDPLUS)
            _, data = self.call(self.client.capability)
            said = b" ".join(d for d in data if isinstance(d, bytes))  # (a literal in it is none: a tuple)
            self.capabilities = {c.upper() for c in said.decode("ascii", "replace").split()}
        except BaseException:
            close(self.client)
            raise
        return self

    def __exit__(self, *exception):
        close(self.client)

    def reconnect(self):
        """A new connection with the folder open again, after one was lost (a server may close
        it on a message it cannot read); the run's error when the server cannot be reached again
        or the folder is no longer the one listed (another UIDVALIDITY: its UIDs name others)."""
        listed = self.uid_validity
        close(self.client)
        self.__enter__()
        if self.uid_validity != listed:
            raise NbtextError(f"{self.folder.url}: the folder was replaced while it was read (UIDVALIDITY changed)")

    def command(self, what, *arguments, answers=0, literal=0, budget=None, each=None, lines=0):
        """client.uid(what, ...)'s data; a refusal Refused naming `what`, a lost connection
        Lost naming the server (both NbtextErrors). The answer may hold `answers` untagged
        answers, each with a literal of which `literal` bytes are kept, at most `budget` bytes
        of literals in all; `each` reads answers as they arrive, of which `lines` are expected
        (their time: nbtext.reading.imapclient)."""
        kind = command_kind(what, arguments)
        with self.client.expecting(answers, literal, budget, each, lines):
            try:
                answer, data = self.call(self.client.uid, what, *arguments)
            except Refused as refusal:  # (a BAD: named by the command as a NO is)
                refusal.command, refusal.kind, refusal.folder = what, kind, self.folder.url
                raise
        if "EXISTS" in self.client.untagged_responses:  # new mail meanwhile: its UIDs are UIDNEXT's and above
            self.uid_next = None
        if answer != "OK":
            said = _said(data)
            raise Refused(
                f"{self.folder.url}: the server refused UID {what} ({said})", said, False, what, kind, self.folder.url
            )
        self.kinds_done.add(kind)
        return data

    def call(self, method, *arguments):
        """method(*arguments): a lost connection Lost, one line naming the server; a command the
        server calls bad (imaplib raises for BAD, returns NO) Refused."""
        import imaplib

        from nbtext.reading.imapclient import Overrun, Stalled

        try:
            return method(*arguments)
        except Stalled as e:
            raise TooSlow(f"{self.folder.url}: {e}: nothing more is read") from None
        except Overrun as e:
            raise NbtextError(
                f"{self.folder.url}: {server_text(e)}, past what nbtext reads: nothing more is read"
            ) from None
        except (imaplib.IMAP4.abort, OSError) as e:
            raise Lost(f"{self.folder.url}: the connection to {self.folder.server} failed ({server_text(e)})") from None
        except imaplib.IMAP4.error as e:
            said = server_text(e)
            raise Refused(f"{self.folder.url}: the server refused a command ({said})", said, bad=True) from None


class Lost(NbtextError):
    """The connection was lost: the server closed it, or the network failed."""


class TooSlow(NbtextError):
    """The server did not finish an answer by its deadline (nbtext.reading.imapclient.Stalled),
    or closed the connection on LOST_IN_A_ROW messages in a row: an error of the run, nothing
    more asked of it (imap-scan's next run asks for that batch's messages one at a time)."""


LOST_IN_A_ROW = 3  # messages in a row whose fetch lost the connection (each tried twice) before the run ends


class Refused(NbtextError):
    """The server answered a command with NO or BAD (`reason`: what it said; `bad`: BAD, a
    command it did not take, where NO is one it could not do; `command`: the UID command
    refused, `kind` its command_kind, `folder` the URL of the folder it was asked of, where
    known); the connection goes on."""

    def __init__(self, message, reason, bad=False, command=None, kind=None, folder=None):
        super().__init__(message)
        self.reason, self.bad, self.command, self.kind, self.folder = reason, bad, command, kind or command, folder


def command_kind(what, arguments):
    """The kind of a UID command, as a server may refuse every one of it alike: its name, a
    STORE's by the flags it stores (MARK, a keyword, \\Deleted: a server may refuse deletions
    alone), and a FETCH's by what it asks (a listing, flags, a message's identity, its bytes)."""
    if what == "STORE" and len(arguments) >= 3:
        return f"STORE {arguments[1]} {arguments[2]}"
    if what != "FETCH" or not arguments:
        return what
    items = str(arguments[-1])
    for part, kind in (("BODY.PEEK[]", "bytes"), ("HEADER.FIELDS", "identity"), ("FLAGS", "flags")):
        if part in items:
            return f"FETCH {kind}"
    return "FETCH listing"


def connect(folder, access=DEFAULT_ACCESS):
    """An imaplib client logged in to the folder's server, with `access` (an ImapAccess)."""
    import imaplib
    import socket
    import ssl

    from nbtext.reading.imapclient import Client, Garbled, Overrun, Stalled, TlsClient

    where = folder.where
    client = None
    try:
        port = folder.port or PORTS[folder.scheme]
        if folder.scheme == "imaps":
            client = TlsClient(folder.host, port, ssl_context=tls_context(access), timeout=TIMEOUT)
        else:
            client = Client(folder.host, port, timeout=TIMEOUT)
        if client.state != "NONAUTH":  # (PREAUTH: RFC 3501 7.1.4; a way round STARTTLS and the login)
            raise NbtextError(
                f"{where}: the server greeted nbtext as logged in already (PREAUTH), which it never asked for: "
                "nothing is read"
            )
        if folder.scheme != "imaps" and "STARTTLS" in client.capabilities:  # no password in the clear where it need not
            client.starttls(tls_context(access))
        mechanism = login_mechanism(client, folder, access)
    except NbtextError:
        close(client)
        raise
    except Stalled as e:
        close(client)
        raise NbtextError(f"{where}: {e}") from None
    except Overrun as e:
        close(client)
        raise NbtextError(f"{where}: {server_text(e)}, past what nbtext reads") from None
    except ssl.SSLCertVerificationError as e:
        close(client)
        raise NbtextError(
            f"{where}: the server's certificate is not trusted ({e.verify_message}); give the certificate of "
            "the authority that signed it with --ca-file FILE"
        ) from None
    except ssl.SSLError as e:
        close(client)
        raise NbtextError(f"{where}: TLS failed ({e.reason or e})") from None
    except socket.timeout:  # (TimeoutError from Python 3.10: ssl's said "_ssl.c:989: The handshake ...")
        close(client)
        raise NbtextError(
            f"cannot connect to {where}: the connection or its TLS handshake was not made in time"
        ) from None
    except OSError as e:  # refused, no such host, unreachable
        close(client)
        raise NbtextError(f"cannot connect to {where}: {e.strerror or e}") from None
    except imaplib.IMAP4.error as e:
        close(client)
        raise NbtextError(f"{where} does not speak IMAP ({server_text(e)})") from None
    except BaseException:  # (a signal's exception, any other: the connection closed, logged out only in step)
        close(client)
        raise
    try:
        secret = password(folder, access)  # (asked for after the server answered: a wrong host asks for nothing)
    except BaseException:
        close(client)
        raise
    try:
        log_in(client, folder.user, secret, mechanism)
    except Stalled as e:
        close(client)
        raise NbtextError(f"{where}: {e}") from None
    except Overrun as e:
        close(client)
        raise NbtextError(f"{where}: {server_text(e)}, past what nbtext reads") from None
    except Garbled as e:
        close(client)
        raise NbtextError(f"{where} does not speak IMAP (it sent {server_text(e)})") from None
    except imaplib.IMAP4.error:  # (the server's text is left out: it is the server's, and says no more)
        close(client)
        raise NbtextError(
            f"{where}: login failed for {folder.user} (the password is wrong, or the user unknown)"
        ) from None
    except OSError as e:
        close(client)
        raise NbtextError(f"{where}: the connection failed during login ({e.strerror or e})") from None
    except BaseException:
        close(client)
        raise
    return client


def login_mechanism(client, folder, access=DEFAULT_ACCESS):
    """How the password may be sent: "LOGIN", or "PLAIN" (AUTHENTICATE PLAIN, where LOGIN is
    disabled over TLS); an NbtextError saying what to do where it may not be sent at all: over
    a connection without TLS to a server that says LOGINDISABLED (RFC 3501 6.2.3), or to a host
    nbtext.reading.imapurl.in_clear_allowed does not allow."""
    where = folder.where
    secure = folder.scheme == "imaps" or getattr(client, "_tls_established", False)
    disabled = "LOGINDISABLED" in client.capabilities
    if not secure and disabled:
        raise NbtextError(
            f"{where} takes no password without TLS (LOGINDISABLED) and offers no STARTTLS: "
            f"read imaps://{folder.account}/... instead"
        )
    if not secure and not in_clear_allowed(folder.host, access):
        raise NbtextError(
            f"{where} offers no STARTTLS: the password would cross the network in clear text. Read "
            f"imaps://{folder.account}/... instead, or, where the network to it is yours alone, "
            f"give --plaintext-login {folder.shown_host}"
        )
    if disabled and "AUTH=PLAIN" not in client.capabilities:
        raise NbtextError(f"{where} takes no password login nbtext knows (LOGINDISABLED, and no AUTH=PLAIN)")
    return "PLAIN" if disabled else "LOGIN"


def log_in(client, user, secret, mechanism="LOGIN"):
    """LOGIN (`mechanism`: login_mechanism's) where user and password are printable ASCII
    (LOGIN's quoted strings carry no other; imaplib raises on non-ASCII), else AUTHENTICATE
    PLAIN, whose user and password are UTF-8 (RFC 4616), base64 on the wire. Bytes that are not
    UTF-8 (a --password-command's output, read with surrogateescape) go as they were printed."""
    printable = all(" " <= c <= "~" for c in user + secret)
    if mechanism == "LOGIN" and printable:
        client.login(_quoted(user), secret)  # (imaplib quotes the password, sends the user as given)
    else:
        client.authenticate("PLAIN", lambda challenge: f"\0{user}\0{secret}".encode("utf-8", "surrogateescape"))


def tls_context(access=DEFAULT_ACCESS):
    """The TLS settings: the server's certificate and host name verified, against the system's
    certificates or those of `access`'s --ca-file."""
    import ssl

    try:
        return ssl.create_default_context(cafile=access.ca_file or os.environ.get(CA_FILE_VARIABLE) or None)
    except (OSError, ssl.SSLError) as e:
        raise NbtextError(f"cannot read the --ca-file: {getattr(e, 'strerror', None) or e}") from None


def opened(client, folder, readonly=True):
    """Open the folder (EXAMINE, or SELECT when not `readonly`): (its UIDVALIDITY, how many
    messages it holds, its UIDNEXT, its PERMANENTFLAGS: the flags it keeps, upper case, `\\*`
    among them where it keeps any keyword), None for what the server did not say; a number no
    such value can be is the run's error. (A folder EXAMINE opens keeps no flag: its
    PERMANENTFLAGS say so, as Dovecot's `()`.)"""
    import imaplib
    import re

    codes = ("UIDVALIDITY", "UIDNEXT", "PERMANENTFLAGS")
    try:
        answer, data = client.select(mailbox_argument(folder.name), readonly=readonly)
        told = {code: client.response(code)[1][-1] for code in codes} if answer == "OK" else {}
    except (imaplib.IMAP4.error, OSError) as e:
        raise NbtextError(f"{folder.url}: the connection to {folder.server} failed ({server_text(e)})") from None
    if answer != "OK":
        raise NbtextError(f"{folder.url}: no such folder on {folder.server} ({_said(data)})")
    exists = data[-1] if data and isinstance(data[-1], bytes) else None
    kept = told.get("PERMANENTFLAGS")  # (said in no form IMAP has: as not said)
    kept = re.match(rb"\s*\(([^()]*)\)", kept) if isinstance(kept, bytes) else None
    return (
        _number(told.get("UIDVALIDITY"), "UIDVALIDITY", folder, 1, LARGEST_UID),
        _number(exists, "EXISTS", folder, 0, LARGEST_UID),
        _number(told.get("UIDNEXT"), "UIDNEXT", folder, 1, LARGEST_UID + 1),
        None if kept is None else set(kept[1].decode("ascii", "replace").upper().split()),
    )


def _number(said, what, folder, low, high):
    """The number the server `said` for `what` (bytes, None where it said none), one of low..high
    (IMAP's are 32-bit); any other the run's error: the server lies."""
    if said is None:
        return None
    value = int(said) if said.isdigit() and len(said) <= 10 else None
    if value is None or not low <= value <= high:
        raise NbtextError(
            f"{folder.url}: the server says {what} {server_text(said)}, which is no {what} IMAP has "
            f"(a number {low} to {high}): nothing is read"
        )
    return value


def close(client):
    """Log out, whatever state the connection is in, waiting for the server's answer at most
    LOGOUT_SECONDS (and not past the run's time limit): a clean-up, a signal's too, never waits
    on the network longer. One out of step (an answer cut before its end, by an Overrun, a lost
    connection, an error or a signal: nbtext.reading.imapclient) is closed without a word (its
    answers are not to be read)."""
    if client is None:
        return
    try:
        if not getattr(client, "broken", False):
            from nbtext.reading.imapclient import time_limit  # (loaded: a client is made of it)

            with time_limit(LOGOUT_SECONDS):
                client.logout()
    except Exception:  # (a connection already lost has nothing to log out of; a silent one, no more time)
        pass
    finally:
        try:
            client.shutdown()  # (the socket closed, whatever the logout did: a signal that cut it too)
        except Exception:
            pass


def server_text(said):
    """The server's own words (bytes or text: a NO's reason, an imaplib error quoting its
    answer) as a message quotes them: one line of printable characters, every other character
    (a terminal's control bytes: ESC, an OSC sequence's BEL, C1's CSI) a `?`, at most SHOWN
    characters. Every message that quotes the server goes through here."""
    text = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
    text = shown(" ".join(text.split()))
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def _said(data):
    """What the server said with a refusal, as text of one line."""
    return server_text(b" ".join(d for d in data or () if isinstance(d, bytes))) or "no reason given"


def mailbox_argument(name):
    """A folder's name as an IMAP command takes it: in modified UTF-7 (RFC 3501 5.1.3), quoted."""
    return _quoted(_modified_utf7(name))


def _quoted(text):
    """An IMAP quoted string of printable ASCII `text`."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _modified_utf7(name):
    import base64

    out, pending = [], []

    def flush():
        if pending:
            data = "".join(pending).encode("utf-16-be")
            out.append("&" + base64.b64encode(data).decode().rstrip("=").replace("/", ",") + "-")
            pending.clear()

    for ch in name:
        if 0x20 <= ord(ch) <= 0x7E:
            flush()
            out.append("&-" if ch == "&" else ch)
        else:
            pending.append(ch)
    flush()
    return "".join(out)


# --- reading ----------------------------------------------------------------------------------
def folder_documents(url, label=None, max_bytes=DEFAULT_MAX_BYTES, access=None):
    """Every message of the folder `url` names, in UID order, read-only, its server reached
    with `access` (the command's ImapAccess; None: nothing given)."""
    folder = parse(url)
    with Session(folder, access=access or DEFAULT_ACCESS) as session:
        for uids in fetch_batches(listing(session), max_bytes):
            yield from fetched(session, uids, label, max_bytes)


def fetch_batches(listed, max_bytes=DEFAULT_MAX_BYTES):
    """Lists of the UIDs of `listed` (listing's (UID, size) pairs) that one FETCH asks for:
    in_batches' rule, the one every batch is cut by, at most BATCH messages and BATCH_BYTES,
    each message weighed min(size, max_bytes + 1) (what is asked of it; a size not said counts
    as that); one larger than the bound is a FETCH alone. A size that lies costs no more than
    fetch_bound: what one FETCH keeps of its messages, whatever sizes the server said."""
    asked = max_bytes + 1
    for batch in in_batches(
        listed, BATCH, weigh=lambda uid_size: min(asked if uid_size[1] is None else uid_size[1], asked)
    ):
        yield [uid for uid, _ in batch]


def fetch_bound(max_bytes=DEFAULT_MAX_BYTES):
    """The bytes of messages one FETCH keeps at most: what a batch of fetch_batches weighs at
    most (BATCH_BYTES, or one message of max_bytes + 1), plus FETCH_MARGIN. A server whose sizes
    were short sends more: a message past the bound is read and thrown away, then asked for
    again alone (_fetched), so each is still read whole up to max_bytes."""
    return max(BATCH_BYTES, max_bytes + 1) + FETCH_MARGIN


def listing(session, after=0):
    """(UID, RFC822.SIZE or None where the server said none) of the open folder's messages
    above `after`, in ascending UID (a Listing): asked for as one FETCH of both, a short line a
    message (a SEARCH answers in one line, which for a large folder is longer than imaplib
    reads), read by _Listed as the lines arrive."""
    if session.exists == 0:  # (an empty folder has no `1:*`)
        return Listing()
    if after >= LARGEST_UID:  # (no UID is above it: `N:*` would name none)
        import warnings

        warnings.warn(
            f"{session.folder.url}: its last message scanned has UID {LARGEST_UID}, the largest IMAP has: no "
            "message can come after it until the server renumbers the folder (a new UIDVALIDITY)",
            stacklevel=2,
        )
        return Listing()
    # (`N:*` holds the highest UID, below N too; a line a message)
    listed = _Listed(session, after, "FETCH")
    try:
        session.command("FETCH", f"{after + 1}:*", "(UID RFC822.SIZE)", each=listed, lines=session.exists)
    except Refused as refusal:  # a NO for some, the others answered (Dovecot's [SERVERBUG]: a damaged mail file)
        if refusal.bad:  # (BAD: the command not taken, no listing at all)
            raise
        import warnings

        warnings.warn(
            f"{session.folder.url}: the server refused to list some messages past UID {after} ({refusal.reason}): "
            "their UIDs asked for alone, those it did not size read one at a time",
            stacklevel=2,
        )
        return _with_every_uid(listed.result(), _uids_only(session, after), after)
    return listed.result()


def _uids_only(session, after):
    """The UIDs above `after`, ascending, where the listing with sizes was refused: a FETCH of
    the UIDs alone (a server answers it from its index, without the messages' files; a line a
    message, bounded as the listing is), or, refused too, a SEARCH (one line: a folder past some
    140,000 messages above `after` passes the client's bound on a line, the run's error)."""
    listed = _Listed(session, after, "FETCH")
    try:
        session.command("FETCH", f"{after + 1}:*", "(UID)", each=listed, lines=session.exists)
    except Refused:
        return searched(session, "UID", f"{after + 1}:*")
    return [uid for uid, _ in listed.result()]


def _with_every_uid(sized, every, after):
    """The Listing of the UIDs `every` (a SEARCH's, ascending) above `after`, each with its size
    where the Listing `sized` (a FETCH the server refused part of) says one: a message whose
    size the server would not say is listed without one, asked for alone, and one it will not
    send is skipped (as every reader skips it): one damaged message never hides the folder."""
    uids, sizes, at = [], [], 0
    for uid in every:
        if uid <= after:
            continue
        while at < len(sized.uids) and sized.uids[at] < uid:
            at += 1
        uids.append(uid)
        sizes.append(sized.sizes[at] if at < len(sized.uids) and sized.uids[at] == uid else Listing.NO_SIZE)
    return Listing(uids, sizes)


def searched(session, *criteria):
    """The UIDs of the open folder's messages a UID SEARCH of `criteria` answers, ascending:
    read by _Listed, as a listing is."""
    listed = _Listed(session, 0, "SEARCH")
    session.command("SEARCH", *criteria, each=listed, lines=session.exists)
    return [uid for uid, _ in listed.result()]


class Listing:
    """(UID, size or None) pairs in ascending UID, held as 12 bytes a message (two arrays)."""

    NO_SIZE = (1 << 64) - 1  # (a size the server did not say)

    def __init__(self, uids=(), sizes=()):
        self.uids, self.sizes = array("I", uids), array("Q", sizes)

    def __len__(self):
        return len(self.uids)

    def __iter__(self):
        for uid, size in zip(self.uids, self.sizes):
            yield uid, None if size == self.NO_SIZE else size


class _Listed:
    """The one reader of a listing (a UID FETCH's lines of `(UID RFC822.SIZE)`, a UID SEARCH's
    UIDs), handed each answer as it arrives (Session.command's `each`), keeping none of those
    that list a new UID (the others are the client's, counted toward its bound of answers): each UID is checked as it comes (_uid: 1..2^32-1, below UIDNEXT), and the distinct UIDs above
    `after` are at most what the folder can hold, by what the server itself said: its EXISTS
    (the largest said, plus each EXPUNGE said meanwhile: a message gone makes room for another),
    and while no new mail was said, the numbers from `after` + 1 to below its UIDNEXT. One more
    is the run's error (nothing is read, a scan's state left as it was): what a listing holds
    is bounded by the server's own word, 12 bytes a message, never by the lines it sends."""

    UID_SAID = re.compile(rb"\bUID (\d+)")
    SIZE_SAID = re.compile(rb"RFC822\.SIZE (\d{1,20})\b")

    def __init__(self, session, after, kind):
        if session.exists is None:  # (RFC 3501 6.3.1: an EXAMINE or SELECT says it)
            raise NbtextError(
                f"{session.folder.url}: the server did not say how many messages it holds: nothing is read"
            )
        self.session, self.after, self.kind = session, after, kind
        self.exists, self.expunged = session.exists, 0
        self.uids, self.sizes = array("I"), array("Q")  # ascending, as a server answers
        # those that came out of order, each UID << 32 | its size (8 bytes a message): sorted, and
        # the latest not yet sorted in (a set of their UIDs too: a UID said again is known at once)
        self.late, self.unsorted, self.unsorted_uids = array("Q"), array("Q"), set()
        self._bound()

    def _bound(self):
        """self.most: the UIDs above `after` the folder can hold, by what the server said so far."""
        self.most = self.exists + self.expunged
        if self.session.uid_next is not None:
            self.most = min(self.most, self.session.uid_next - 1 - self.after)

    def __call__(self, kind, data):
        """Read one untagged answer (nbtext.reading.imapclient.Bounded.expecting's `each`):
        True where it listed a new UID, held here and kept nowhere else; any other (no UID, or
        only those held or at most `after`) is kept by the client, and counted toward the bound
        of its answers, so what is read of a listing is bounded by the folder's size."""
        if kind == "EXISTS":  # new mail meanwhile (kept too: Session.command reads it)
            self.exists = max(self.exists, _number(data, "EXISTS", self.session.folder, 0, LARGEST_UID))
            self.session.uid_next = None  # (its UIDs are UIDNEXT's and above)
            self._bound()
            return False
        if kind == "EXPUNGE":
            self.expunged += 1
            self._bound()
            return False
        if kind != self.kind:
            return False
        line, new = (data[0] if isinstance(data, tuple) else data) or b"", False
        if kind == "SEARCH":
            for said in line.split(b"(", 1)[0].split():  # (a CONDSTORE server's `(MODSEQ n)` after them)
                if said.isdigit():
                    new |= self._add(_uid(said, self.session), Listing.NO_SIZE)
        else:
            size = self.SIZE_SAID.search(line)
            size = Listing.NO_SIZE if size is None else min(int(size[1]), Listing.NO_SIZE - 1)
            for said in self.UID_SAID.findall(line):
                new |= self._add(_uid(said, self.session), size)
        return new

    def _add(self, uid, size):
        """One UID listed, and its size (Listing.NO_SIZE: not said): whether it is new."""
        uids = self.uids
        if uid <= self.after:
            return False
        if uids and uid <= uids[-1]:  # (said again, or out of order)
            at = bisect_left(uids, uid)
            if uids[at] == uid:
                self.sizes[at] = self.sizes[at] if size == Listing.NO_SIZE else size
                return False
            if uid in self.unsorted_uids or self._late_holds(uid):  # (the size said first kept)
                return False
        if len(uids) + len(self.late) + len(self.unsorted) >= self.most:
            raise NbtextError(
                f"{self.session.folder.url}: the server listed more messages than the folder holds "
                f"({self.most:,} above UID {self.after}, by its EXISTS and UIDNEXT): nothing is read"
            )
        if uids and uid < uids[-1]:
            self.unsorted.append(uid << 32 | min(size, LATE_NO_SIZE))
            self.unsorted_uids.add(uid)
            if len(self.unsorted) >= max(UNSORTED, len(self.late) // 32):  # (so sorting in stays linear overall)
                self._sort_in()
        else:
            uids.append(uid)
            self.sizes.append(size)
        return True

    def _late_holds(self, uid):
        """Whether `uid` is among the sorted ones out of order."""
        at = bisect_left(self.late, uid << 32)
        return at < len(self.late) and self.late[at] >> 32 == uid

    def _sort_in(self):
        """The unsorted ones out of order sorted in with the others (numpy: 16 bytes a message at the peak)."""
        import numpy as np

        packed = np.concatenate([np.frombuffer(self.late, np.uint64), np.frombuffer(self.unsorted, np.uint64)])
        packed.sort(kind="stable")  # (runs merged)
        self.late, self.unsorted, self.unsorted_uids = array("Q"), array("Q"), set()
        self.late.frombytes(memoryview(packed).cast("B"))

    def result(self):
        """The Listing of what was read: those out of order sorted in with the others (numpy,
        in arrays); a UID said twice is one message, of one of the sizes said."""
        listed = Listing()
        if not self.late and not self.unsorted:
            listed.uids, listed.sizes = self.uids, self.sizes
            return listed
        import numpy as np

        self._sort_in()
        uids = np.frombuffer(self.uids, dtype=np.uint32).astype(np.uint64) << np.uint64(32)
        sizes = np.minimum(np.frombuffer(self.sizes, dtype=np.uint64), np.uint64(LATE_NO_SIZE))
        packed = np.concatenate([uids | sizes, np.frombuffer(self.late, dtype=np.uint64)])
        del uids, sizes
        self.uids, self.sizes, self.late = array("I"), array("Q"), array("Q")
        packed.sort(kind="stable")  # (no UID twice: those said again were known as they came)
        sizes = packed & np.uint64(LATE_NO_SIZE)
        sizes[sizes == LATE_NO_SIZE] = Listing.NO_SIZE
        listed.uids.frombytes(memoryview((packed >> np.uint64(32)).astype(np.uint32)).cast("B"))
        listed.sizes.frombytes(memoryview(sizes).cast("B"))
        return listed


UNSORTED = 4096  # UIDs out of order held before they are sorted in (or a 32nd of those sorted, if more)
LATE_NO_SIZE = (1 << 32) - 1  # (a size not said, in a UID listed out of order; RFC 3501's numbers are 32-bit)


def _uid(said, session):
    """A UID the server listed: 1..2^32-1 and below the folder's UIDNEXT (where it said one);
    any other the run's error (a lying server: a scan's state left as it was)."""
    uid = int(said) if len(said) <= 10 else None
    below = session.uid_next or LARGEST_UID + 1
    if uid is None or not 1 <= uid < below:
        raise NbtextError(
            f"{session.folder.url}: the server listed a message of UID {server_text(said)}, which no message can "
            f"have (UIDs are 1 to {below - 1}): nothing is read"
        )
    return uid


def fetched(session, uids, label=None, max_bytes=DEFAULT_MAX_BYTES):
    """The Documents of the messages `uids` (one command; any it refuses, asked for one by one),
    each of at most `max_bytes` bytes. A message the server refuses to send is a Document with
    `error`, named. One the folder no longer holds (deleted by another client since the folder
    was listed) is no document of it: left out, and the batch's such messages said in one
    warning line (not an error: nothing the user gave is wrong)."""
    gone = []
    for uid, data, refusal in _fetched(session, uids, max_bytes):
        name = session.folder.message_name(uid)
        if data is not None:
            yield Document(name, cut(data, max_bytes), label)
        elif refusal is not None:
            yield Document(name, None, label, error=refusal)
        else:
            gone.append(uid)
    if gone:
        warn_of_messages(session.folder.url, gone, "deleted from the folder since it was listed, not read")


def _fetched(session, uids, max_bytes, again=False):
    """(UID, its bytes or None, None or why the server refused to send it) of each of `uids`:
    bytes None and no refusal for a message the folder no longer holds (a UID FETCH answers
    nothing for a UID that is not in the folder, RFC 3501 6.4.8, or NO [EXPUNGEISSUED],
    RFC 5530). A connection lost while one message came is tried `again` once (the network
    may have failed, not the message) before that message is one the server will not send. One
    FETCH keeps at most fetch_bound bytes of messages: one past it (its size was said short) is
    asked for again alone, where its own max_bytes + 1 always fit."""
    part = "BODY.PEEK[]" if max_bytes + 1 > LARGEST_PARTIAL else f"BODY.PEEK[]<0.{max_bytes + 1}>"
    try:
        data = session.command(
            "FETCH",
            uid_set(uids),
            f"(UID {part})",
            answers=len(uids),
            literal=max_bytes + 1,
            budget=fetch_bound(max_bytes),
        )
        messages, refusal = _messages(data), None
        session.lost_in_a_row = 0 if messages else session.lost_in_a_row
    except Lost:  # a server may close the connection on a message it cannot read
        session.reconnect()  # (cannot: an error of the whole run)
        if len(uids) > 1 or not again:
            yield from _one_by_one(session, uids, max_bytes, again=len(uids) == 1)
            return
        session.lost_in_a_row += 1  # (a server closing it on every message: connections bounded, not 2 a message)
        if session.lost_in_a_row >= LOST_IN_A_ROW:
            raise TooSlow(
                f"{session.folder.url}: the server closed the connection on {LOST_IN_A_ROW} messages in a row: "
                "nothing more is read"
            ) from None
        messages, refusal = {}, "the server closed the connection when asked for it"
    except Refused as e:
        if len(uids) > 1:  # one message the server will not send does not stop the others
            yield from _one_by_one(session, uids, max_bytes)
            return
        gone = "[EXPUNGEISSUED]" in e.reason.upper()
        messages, refusal = {}, None if gone else f"the server refused to send it ({e.reason})"
    for uid in uids:
        if uid in messages and messages[uid] is None:  # (past the FETCH's bound: not kept)
            if len(uids) > 1:
                yield from _fetched(session, [uid], max_bytes)
            else:  # (alone, it fits: the server sent others' first)
                yield uid, None, "the server sent more than was asked with it"
        elif uid in messages or refusal is not None:
            yield uid, messages.get(uid), refusal
        elif len(uids) > 1:  # left out of the answer (or sent as NIL): asked for alone
            yield from _fetched(session, [uid], max_bytes)
        else:  # gone only where the folder no longer holds it: a server may answer OK and send nothing
            yield uid, None, None if _gone(session, uid) else "the server answered without its bytes"


def _gone(session, uid):
    """Whether the open folder no longer holds the message `uid` (a FETCH of its UID answers
    nothing for it: RFC 3501 6.4.8)."""
    try:
        said = session.command("FETCH", uid_set([uid]), "(UID)", answers=1)
    except Refused as e:
        return "[EXPUNGEISSUED]" in e.reason.upper()
    return uid not in {answered_uid(line[0] if isinstance(line, tuple) else line or b"") for line in said}


def _one_by_one(session, uids, max_bytes, again=False):
    """_fetched of each of `uids` alone (`again`: a second try of one whose fetch lost the connection)."""
    for uid in uids:
        yield from _fetched(session, [uid], max_bytes, again)


def _messages(data):
    """{UID: bytes, or None where the literal was past the FETCH's bound} of a UID FETCH's
    answer as imaplib gives it: a (`N (UID u BODY[] {n}`, literal) pair per message, the UID
    before the literal or in the bytes after it; or a line whose body is a quoted string (IMAP's
    nstring: a short body may be sent so); a body sent as NIL is none. A message said twice is
    the one kept."""
    found, waiting, literal = {}, False, None

    def keep(uid, literal):
        if uid is not None and (found.get(uid) is None or literal is not None):
            found[uid] = literal

    for item in data:
        if isinstance(item, tuple):
            uid = answered_uid(item[0])
            if uid is not None:
                keep(uid, item[1])
            else:
                waiting, literal = True, item[1]
        elif isinstance(item, bytes) and waiting:
            keep(answered_uid(item), literal)
            waiting = False
        elif isinstance(item, bytes) and (quoted := _quoted_body(item)) is not None:
            keep(answered_uid(item), quoted)
    return found


def _quoted_body(line):
    """The body a FETCH answer's `line` sends as a quoted string (RFC 3501 9: \\" and \\\\ escaped),
    or None: read from the first `BODY[] "` alone, so a line of such openings unclosed is read in
    linear time."""
    opened = re.search(rb'\bBODY\[\](?:<\d+>)? "', line)
    quoted = opened and re.compile(rb'((?:[^"\\]|\\.)*)"').match(line, opened.end())
    return re.sub(rb"\\(.)", rb"\1", quoted[1]) if quoted else None


def answered_uid(line):
    """The UID a line of a UID FETCH's answer names, None where it names none (one of more
    than 10 digits is none: no UID asked for has them)."""
    found = re.search(rb"\bUID (\d{1,10})\b", line)
    return int(found[1]) if found else None


def uid_set(uids):
    """`uids` as a UID command's set: 3,7,12."""
    return ",".join(map(str, uids))


def warn_of_messages(url, uids, what):
    """One warning line of the messages `uids` (ascending) of the folder at `url`: how many,
    `what` befell them, the first UID and how many more."""
    import warnings

    more = f" and {len(uids) - 1:,} more" if len(uids) > 1 else ""
    messages = "message" if len(uids) == 1 else "messages"
    warnings.warn(f"{url}: {len(uids):,} {messages} {what} (UID {uids[0]}{more})", stacklevel=3)
