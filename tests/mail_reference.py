"""A reference reading of e-mail with the standard library (email, policy=default; html.parser).

nbtext.reading.mail reads mail with a small MIME reader of its own, several times faster; the
tests check that both give the same tokens on real messages. Same rules:

- chosen header lines become tokens prefixed with the header's name (`subject:free`);
- body parts are decoded (base64, quoted-printable, declared charset; an unknown or
  lying charset falls back to replacement characters);
- text/html becomes its visible text (script and style dropped), and the hosts its
  links point to become `url:HOST` tokens, as do hosts of URLs in plain text;
- attachments contribute their content type and file name, never their bytes.
"""

from email import message_from_bytes, policy
from email.errors import MessageError
from html.parser import HTMLParser
from urllib.parse import urlsplit

from nbtext.errors import NbtextError
from nbtext.reading.mail import _URL, strip_envelope


def mail_tokens(data, headers, find_tokens):
    """The tokens of one message: tagged header tokens, body tokens, url: and attachment tokens.

    `find_tokens(text)` is the plain tokenizer (it lowercases).
    """
    try:
        message = message_from_bytes(strip_envelope(data), policy=policy.default)
        tokens = []
        for name in headers:
            for value in message.get_all(name) or ():
                tokens.extend(f"{name}:{t}" for t in find_tokens(_header_text(value)))
        for part in message.walk():
            if part.is_multipart():
                continue
            tokens.extend(_part_tokens(part, find_tokens))
        return tokens
    except (MessageError, LookupError, ValueError, TypeError, AttributeError, IndexError) as e:
        raise NbtextError(f"cannot parse message: {e.__class__.__name__}: {e}") from None


def _header_text(value):
    try:
        text = str(value)
    except Exception:  # a malformed encoded word; use the raw text
        text = getattr(value, "_raw", "") or ""
    return clean(text)


def clean(text):
    """Text that encodes as UTF-8: undecodable bytes smuggled as surrogates become U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8") if _has_surrogates(text) else text


def _has_surrogates(text):
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _part_tokens(part, find_tokens):
    content_type = part.get_content_type()
    filename = part.get_filename()
    if part.get_content_disposition() == "attachment" or not content_type.startswith("text/") or filename:
        tokens = [f"attachment:{content_type}"]
        if filename:
            tokens.extend(f"filename:{t}" for t in find_tokens(clean(str(filename))))
        return tokens
    text = clean(part_text(part))
    hosts = []
    if content_type == "text/html":
        text, hosts = html_text(text)
    hosts.extend(_URL.findall(text))
    return find_tokens(text) + [f"url:{h.lower()}" for h in hosts]


def part_text(part):
    """A text part's content, decoded; a lying or unknown charset gives U+FFFD, never an error."""
    try:
        return part.get_content()
    except (LookupError, UnicodeError, ValueError, AssertionError, KeyError):
        payload = part.get_payload(decode=True) or b""
        if isinstance(payload, str):
            return payload
        return payload.decode("utf-8", errors="replace")


class _VisibleText(HTMLParser):
    """Collects the text a reader would see and the hosts of links and images."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.chunks = []
        self.hosts = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._hidden += 1
        for name, value in attrs:
            if name in ("href", "src", "action") and value:
                host = _host(value)
                if host:
                    self.hosts.append(host)

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data):
        if not self._hidden:
            self.chunks.append(data)


def _host(url):
    try:
        return urlsplit(url.strip()).hostname
    except ValueError:
        return None


def html_text(html):
    """(visible text, [link hosts]) of an HTML document; malformed HTML is read as far as it goes."""
    parser = _VisibleText()
    try:
        parser.feed(html)
        parser.close()
    except (AssertionError, ValueError):
        pass
    return " ".join(parser.chunks), parser.hosts
