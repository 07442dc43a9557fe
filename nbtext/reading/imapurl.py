"""An IMAP folder as a PATH names it, `imap://user@host[:port]/FOLDER` or `imaps://...` (RFC
5092's form; nbtext.reading.sources.is_imap tells one), and what a command is given to reach
its server (ImapAccess). Light: no IMAP client (imaplib, ssl, netrc), so a folder's URL is
checked before anything is read, and the command line makes its access, without loading
nbtext.reading.imap, the folders' reader."""

import re
from collections import namedtuple

from nbtext.errors import NbtextError

PORTS = {"imap": 143, "imaps": 993}
PASSWORD_VARIABLE = "NBTEXT_IMAP_PASSWORD"
WHERE_PASSWORDS_GO = (
    f"put it in ~/.netrc (machine HOST login USER password ...), in ${PASSWORD_VARIABLE}, "
    "or give --password-command CMD"
)


class ImapAccess(namedtuple("ImapAccess", "password_command ca_file", defaults=(None, None))):
    """How a command reaches IMAP servers: --password-command and --ca-file as its command line
    gave them, None where it gave none (then $NBTEXT_IMAP_PASSWORD_COMMAND and
    $NBTEXT_IMAP_CA_FILE stand in, read when a server is asked). One value, made by the command
    line and handed down to the reader with the paths, as --max-bytes is."""


DEFAULT_ACCESS = ImapAccess()  # nothing given: the environment's, then ~/.netrc


class Folder(namedtuple("Folder", "scheme user host port name")):
    """An IMAP folder as its URL names it (`port` None: the scheme's own)."""

    @property
    def url(self):
        """The folder's URL, as given but in one spelling (never with a password)."""
        from urllib.parse import quote

        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port is None else f":{self.port}"
        return f"{self.scheme}://{quote(self.user, safe='')}@{host}{port}/{quote(self.name, safe='/')}"

    def message_name(self, uid):
        """A message's name: RFC 5092's URL of it."""
        return f"{self.url}/;UID={uid}"

    @property
    def label(self):
        """Its class when given as a CLASS_DIR: the folder's last name, as a folder's is."""
        return self.name.rstrip("/").rsplit("/", 1)[-1]

    @property
    def server(self):
        return f"{self.host}:{self.port or PORTS[self.scheme]}"


def parse(url):
    """The Folder a URL names; an NbtextError of one line for a URL that cannot be read,
    one holding a password (never repeated in the message), or one that names no folder."""
    from urllib.parse import unquote, urlsplit

    scheme, _, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    userinfo, at, hostport = netloc.rpartition("@")
    if ":" in userinfo:
        shown = f"{scheme}://{userinfo.split(':', 1)[0]}@{hostport}{slash}{path}"
        raise NbtextError(
            f"{shown}: a password in the URL would be seen by every user of this machine (ps, the shell's "
            f"history): drop it, and {WHERE_PASSWORDS_GO}"
        )
    try:
        parts = urlsplit(f"{scheme.lower()}://{netloc}/")
        port = parts.port
    except ValueError as e:
        raise NbtextError(f"{url}: not an IMAP URL ({e})") from None
    if not at or not userinfo:
        raise NbtextError(f"{url}: name the user, as in {scheme}://USER@HOST/FOLDER")
    if ";" in userinfo:
        raise NbtextError(f"{url}: only USER@HOST is read (the login's mechanism is the server's plain LOGIN)")
    if not parts.hostname:
        raise NbtextError(f"{url}: name the server, as in {scheme}://USER@HOST/FOLDER")
    if re.search(r"/;(uid|section|partial)=", path, re.IGNORECASE):  # (RFC 5092's URL of one message or part)
        raise NbtextError(
            f"{url}: names one message of a folder, and only whole folders are read: give the folder's URL"
        )
    name = unquote(path.split(";", 1)[0]).rstrip("/")  # (RFC 5092's ;UIDVALIDITY and the like are not read)
    if not name:
        raise NbtextError(f"{url}: name the folder, as in {scheme}://USER@HOST/INBOX")
    return Folder(scheme.lower(), unquote(userinfo), parts.hostname, port, name)
