"""An IMAP folder as a PATH names it, `imap://user@host[:port]/FOLDER` or `imaps://...` (RFC
5092's form; nbtext.reading.sources.is_imap tells one), and what a command is given to reach
its server (ImapAccess). Light: no IMAP client (imaplib, ssl, netrc), so a folder's URL is
checked before anything is read, and the command line makes its access, without loading
nbtext.reading.imap, the folders' reader."""

import os
import re
from collections import namedtuple

from nbtext.errors import NbtextError

PORTS = {"imap": 143, "imaps": 993}
PASSWORD_VARIABLE = "NBTEXT_IMAP_PASSWORD"
PLAINTEXT_VARIABLE = "NBTEXT_IMAP_PLAINTEXT_LOGIN"
LARGEST_UID = (1 << 32) - 1  # IMAP's UIDs (and UIDVALIDITY) are 32-bit numbers above 0 (RFC 3501)
WHERE_PASSWORDS_GO = (
    f"put it in ~/.netrc (machine HOST login USER password ...), in ${PASSWORD_VARIABLE}, "
    "or give --password-command CMD"
)


class ImapAccess(namedtuple("ImapAccess", "password_command ca_file plaintext_login", defaults=(None, None, ()))):
    """How a command reaches IMAP servers: --password-command, --ca-file and --plaintext-login
    (hosts) as its command line gave them, None (or none) where it gave none (then
    $NBTEXT_IMAP_PASSWORD_COMMAND, $NBTEXT_IMAP_CA_FILE and $NBTEXT_IMAP_PLAINTEXT_LOGIN stand
    in, read when a server is asked). One value, made by the command
    line and handed down to the reader with the paths, as --max-bytes is."""


DEFAULT_ACCESS = ImapAccess()  # nothing given: the environment's, then ~/.netrc


def in_clear_allowed(host, access=DEFAULT_ACCESS):
    """Whether a password may go to `host` over a connection without TLS (imap:// where the
    server offers no STARTTLS): to a loopback address named so (127.0.0.0/8, ::1, localhost:
    it never leaves the machine), or to a host the user named with --plaintext-login HOST (else
    $NBTEXT_IMAP_PLAINTEXT_LOGIN, hosts apart by spaces or commas), as mutt's ssl_force_tls
    and fetchmail's sslmode leave it to the user. The one rule: nbtext.reading.imap asks it."""
    import ipaddress

    host = host.lower().strip("[]")
    try:  # (localhost. with its final dot is no name /etc/hosts answers: the resolver asks DNS for it)
        if host == "localhost" or ipaddress.ip_address(host).is_loopback:
            return True
    except ValueError:  # (a name)
        pass
    named = access.plaintext_login or re.split(r"[\s,]+", os.environ.get(PLAINTEXT_VARIABLE, ""))
    return host.rstrip(".") in {h.lower().rstrip(".").strip("[]") for h in named if h}


class Folder(namedtuple("Folder", "scheme user host port name uid_validity", defaults=(None,))):
    """An IMAP folder as its URL names it (`port` None: the scheme's own; `uid_validity`: RFC
    5092's `;UIDVALIDITY=N`, None where the URL gives none). Opened only where its UIDVALIDITY
    is that one (nbtext.reading.imap.Session): a folder recreated or renumbered is refused.
    Its `url` leaves that out: the folder's name, the same with and without it."""

    def other(self, name):
        """The folder `name` on the same server, as the same user (no UIDVALIDITY of its own)."""
        return self._replace(name=name, uid_validity=None)

    @property
    def url(self):
        """The folder's URL, as given but in one spelling (never with a password)."""
        from urllib.parse import quote

        port = "" if self.port is None else f":{self.port}"
        return f"{self.scheme}://{self.account}{port}/{quote(self.name, safe='/')}"

    @property
    def shown_host(self):
        """The host as a URL holds it, and every message shows it: an IPv6 address in brackets
        ([::1]; a zone's % as %25, RFC 6874), so that what follows its last colon is no port."""
        return f"[{self.host.replace('%', '%25')}]" if ":" in self.host else self.host

    @property
    def account(self):
        """USER@HOST as a URL holds them (the user percent-encoded)."""
        from urllib.parse import quote

        return f"{quote(self.user, safe='')}@{self.shown_host}"

    def message_name(self, uid):
        """A message's name: RFC 5092's URL of it."""
        return f"{self.url}/;UID={uid}"

    @property
    def label(self):
        """Its class when given as a CLASS_DIR: the folder's last name, as a folder's is."""
        return self.name.rstrip("/").rsplit("/", 1)[-1]

    @property
    def server(self):
        """HOST:PORT as a message shows them ([::1]:143)."""
        return f"{self.shown_host}:{self.port or PORTS[self.scheme]}"

    @property
    def where(self):
        """SCHEME://HOST:PORT: the server as a message names it."""
        return f"{self.scheme}://{self.server}"


def parse(url):
    """The Folder a URL names; an NbtextError of one line for a URL that cannot be read,
    one holding a password (never repeated in the message), or one that names no folder."""
    import ipaddress
    from urllib.parse import unquote, urlsplit

    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    userinfo, at, hostport = netloc.rpartition("@")
    if ":" in userinfo:
        without_password = f"{scheme}://{userinfo.split(':', 1)[0]}@{hostport}{slash}{path}"
        raise NbtextError(
            f"{shown(without_password)}: a password in the URL would be seen by every user of this machine (ps, the shell's "
            f"history): drop it, and {WHERE_PASSWORDS_GO}"
        )
    if not sep or scheme.lower() not in PORTS:  # (a typo, imapx:// or imap:/: before state_key's PORTS[scheme])
        said = (
            url if sep or "@" not in url else "...@" + url.rpartition("@")[2]
        )  # (what a password could be in: not said)
        raise NbtextError(
            f"{shown(said)}: not an IMAP URL (it begins imap:// or imaps://, as in imaps://USER@HOST/INBOX)"
        )
    try:
        parts = urlsplit(f"{scheme.lower()}://{netloc}/")
        port = parts.port
    except ValueError as e:
        raise NbtextError(f"{shown(url)}: not an IMAP URL ({e})") from None
    if not at or not userinfo:
        raise NbtextError(f"{shown(url)}: name the user, as in {scheme}://USER@HOST/FOLDER")
    if re.search(r"[?#]", netloc):  # (RFC 3986: either ends USER@HOST: urlsplit read ex?ample.org, u?x@h.org as ex, u)
        raise NbtextError(
            f"{shown(url)}: not an IMAP URL (a ? or # ends USER@HOST, and no host holds one: a user name's is "
            "written %3F or %23)"
        )
    if ";" in userinfo:
        raise NbtextError(f"{shown(url)}: only USER@HOST is read (the login's mechanism is the server's plain LOGIN)")
    if not parts.hostname:
        raise NbtextError(f"{shown(url)}: name the server, as in {scheme}://USER@HOST/FOLDER")
    host = parts.hostname
    if hostport.startswith("["):  # (RFC 3986: an IPv6 address, its zone's % written %25, RFC 6874)
        host = unquote(host)
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise NbtextError(f"{shown(url)}: not an IMAP URL (a host in brackets is an IPv6 address)") from None
    else:  # (RFC 3986's reg-name, RFC 5092's host: percent-encoded UTF-8, decoded before it is checked or used)
        host = unquote(host, errors="surrogateescape").lower()
    # (an IPv6 zone too; before any traffic: the resolver raised UnicodeError, and took a name as typed, %61 and all)
    if not carried(host) or not _resolvable(host) or not hostport.startswith("[") and re.search(_NOT_IN_NAMES, host):
        raise NbtextError(
            f"{shown(url)}: not an IMAP URL (its host is no name a server can have: a control character or bytes "
            "not UTF-8, an empty label as in a..b, a label past 63 bytes, a space, or one of %/:?#[]@\\ "
            "percent-encoded)"
        )
    if port == 0:
        raise NbtextError(f"{shown(url)}: not an IMAP URL (no server listens on port 0)")
    if re.search(r"/;(uid|section|partial)=", path, re.IGNORECASE):  # (RFC 5092's URL of one message or part)
        raise NbtextError(
            f"{shown(url)}: names one message of a folder, and only whole folders are read: give the folder's URL"
        )
    if "?" in path:  # (RFC 5092's search: not read, so not taken for part of the name either)
        raise NbtextError(
            f"{shown(url)}: names a search of a folder (?...), and only whole folders are read: give the folder's "
            "URL (a ? of a folder's name is written %3F)"
        )
    mailbox, _, parameters = path.partition(";")
    name = unquote(mailbox, errors="surrogateescape").rstrip("/")
    uid_validity = _uid_validity(url, parameters.rstrip("/")) if parameters else None
    if not name:
        raise NbtextError(f"{shown(url)}: name the folder, as in {scheme}://USER@HOST/INBOX")
    user = unquote(userinfo, errors="surrogateescape")
    for what, value in (("user name", user), ("folder name", name)):
        if not carried(value):  # (a CR LF in a user name sent a command of the URL's own, the password in it)
            raise NbtextError(
                f"{shown(url)}: its {what} holds a control character (or bytes not UTF-8), which IMAP "
                "cannot carry: give the name as the server knows it"
            )
    return Folder(scheme.lower(), user, host, port, name, uid_validity)


def _uid_validity(url, parameter):
    """The UIDVALIDITY of RFC 5092's `FOLDER;UIDVALIDITY=N` (`parameter`: what follows the
    `;`): a number 1 to 2^32 - 1; anything else after a `;` is refused, not left unread."""
    said = re.fullmatch(r"uidvalidity=([0-9]{1,10})", parameter, re.IGNORECASE)
    if said is None or not 1 <= int(said[1]) <= LARGEST_UID:
        raise NbtextError(
            f"{shown(url)}: only ;UIDVALIDITY=N (a number 1 to {LARGEST_UID}) is read after a folder's name"
        )
    return int(said[1])


_NOT_IN_NAMES = r"[\s%/:?#\[\]@\\]"  # (a URL's delimiters, %, spaces: in no host name, only in one percent-encoded)


def _resolvable(host):
    """Whether the resolver can be given `host`: its IDNA form (the socket module's) exists."""
    try:
        host.encode("idna")
    except UnicodeError:
        return False
    return True


def carried(text):
    """Whether IMAP carries `text` as a user's or a folder's name: no control character
    (C0, DEL, C1) and nothing but UTF-8 (no surrogate of a byte that was not)."""
    return not re.search(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]", text)


def shown(text):
    """`text` (a URL; a server's words: nbtext.reading.imap.server_text) as a message shows it:
    every character not printable (a terminal's control bytes: ESC, BEL, C1's CSI) a `?`."""
    return "".join(c if c.isprintable() else "?" for c in text)
