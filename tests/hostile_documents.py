"""Whole hostile documents for the tokenizer the command line uses: mail with every decoder
nbtext has (charsets, base64 and quoted-printable, RFC 2047 encoded words, RFC 2231
parameters, HTML and its character references, nested multiparts, attached messages) and
plain text, each piece drawn from what breaks decoders: NUL and control characters,
numeric references of thousands of digits, unknown and lying charsets, cut encodings.

A hypothesis strategy (`documents()`): tests/test_tokenizer_total.py runs a bounded pass of
it in `make test`, and fuzz/fuzz.py's `documents` target feeds it atheris' bytes in `make
fuzz` (hypothesis' fuzz_one_input).
"""

import base64
import binascii

from hypothesis import strategies as st

CHARSETS = [
    "utf-8",
    "iso-8859-1",
    "windows-1252",
    "koi8-r",
    "gb2312",
    "shift_jis",
    "utf-16",
    "utf-7",
    "idna",
    "base64",
    "zlib_codec",
    "rot13",
    "x-unknown",
    "utf\x008",
    "",
    "us-ascii",
    "big5",
    "euc-kr",
]
NASTY = [
    "\x00",
    "\r",
    "\n",
    "\t",
    "\x0b",
    "\x1b",
    "\u2028",
    "\ufeff",
    "\ud800",
    "\U0010ffff",
    "İ",
    "ς",
    "\u0301",
    "=?",
    "?=",
    "&#",
    ";",
    "<",
    ">",
    '"',
    "'",
    "%",
    "*",
    "\\",
    " ",
    "://",
    "@",
    ":",
    "--",
]
REFERENCES = [
    "&#" + "9" * 5000 + ";",
    "&#x" + "f" * 4400 + ";",
    "&#" + "0" * 4500 + "65;",
    "&#0;",
    "&#x110000;",
    "&#55296;",
    "&amp;",
    "&nbsp",
    "&#65",
    "&unknown;",
    "&#x;",
    "&#;",
]
WORDS = [
    "free",
    "prize",
    "lunch",
    "meeting",
    "http://evil\x00host/x",
    "https://a.example.com:8080/p",
    "ftp://[::1]/",
    "http://%00/",
    "http://ex ample.com",
    "url:fake",
]


def text_pieces():
    return st.lists(
        st.one_of(st.sampled_from(NASTY), st.sampled_from(WORDS), st.sampled_from(REFERENCES), st.text(max_size=12)),
        max_size=20,
    ).map("".join)


@st.composite
def encoded_word(draw):
    charset = draw(st.sampled_from(CHARSETS))
    payload = draw(text_pieces()).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        return f"=?{charset}?B?{base64.b64encode(payload).decode()}?="
    return f"=?{charset}?Q?{binascii.b2a_qp(payload, header=True).decode('ascii', 'replace')}?="


@st.composite
def parameter(draw):
    name = draw(st.sampled_from(["charset", "name", "filename", "boundary", "name*", "filename*", "format"]))
    value = draw(text_pieces())
    if name.endswith("*"):  # RFC 2231: charset'language'percent-encoded
        value = f"{draw(st.sampled_from(CHARSETS))}''" + "".join(
            f"%{b:02X}" for b in value.encode("utf-8", "surrogatepass")
        )
    return f'; {name}="{value}"' if draw(st.booleans()) else f"; {name}={value}"


@st.composite
def body(draw, content_type):
    text = draw(text_pieces())
    if content_type == "text/html":
        text = "".join(
            draw(
                st.lists(
                    st.sampled_from(
                        [
                            "<html>",
                            "<!--",
                            "-->",
                            "<script>",
                            "</script>",
                            "<style>",
                            '<a href="',
                            '">',
                            "<img src=",
                            "</a>",
                            text,
                            *REFERENCES,
                            "<a href='http://evil\x00host/'>x</a>",
                        ]
                    ),
                    max_size=15,
                )
            )
        )
    data = text.encode(draw(st.sampled_from(["utf-8", "latin-1", "utf-16"])), "replace")
    encoding = draw(st.sampled_from(["", "base64", "quoted-printable", "8bit", "x-uuencode"]))
    if encoding == "base64":
        data = base64.encodebytes(data)[: draw(st.integers(0, 400))]  # cut short, maybe
    elif encoding == "quoted-printable":
        data = binascii.b2a_qp(data) + draw(st.sampled_from([b"", b"=", b"=Z", b"=0"]))
    return encoding, data


@st.composite
def message(draw, depth=0):
    content_type = draw(
        st.sampled_from(
            [
                "text/plain",
                "text/html",
                "multipart/mixed",
                "multipart/alternative",
                "message/rfc822",
                "application/pdf",
                "image/png",
                "text/x\x00evil",
                "",
                "multipart/mixed",
            ]
        )
    )
    boundary = draw(st.sampled_from(["b", "==x==", "a" * 300, "\x00", "b" + "\u00e9"]))
    parameters = "".join(draw(st.lists(parameter(), max_size=3)))
    headers = [
        f"Subject: {draw(st.one_of(encoded_word(), text_pieces()))}",
        f"From: {draw(encoded_word())} <a@{draw(text_pieces())}>",
        f"To: {draw(text_pieces())}",
        f'Content-Type: {content_type}{parameters}; boundary="{boundary}"',
        f"Content-Disposition: {draw(st.sampled_from(['inline', 'attachment', '']))}{draw(parameter())}",
    ]
    if content_type.startswith("multipart/") and depth < 3:
        parts = draw(st.lists(message(depth + 1), max_size=3))
        payload = b"".join(b"--" + boundary.encode("utf-8", "surrogatepass") + b"\n" + p + b"\n" for p in parts)
        payload += draw(st.sampled_from([b"--" + boundary.encode("utf-8", "surrogatepass") + b"--\n", b""]))
        encoding = ""
    elif content_type == "message/rfc822" and depth < 3:
        payload, encoding = draw(message(depth + 1)), ""
    else:
        encoding, payload = draw(body(content_type))
    if encoding:
        headers.append(f"Content-Transfer-Encoding: {encoding}")
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    head = newline.join(draw(st.permutations(headers))).encode("utf-8", "surrogatepass")
    envelope = draw(st.sampled_from([b"", b"From a@b Sat Jan  3 01:05:34 1996\n"])) if depth == 0 else b""
    return envelope + head + newline.encode() * 2 + payload


def documents():
    """A whole document: a mail message as above, or plain text of the same pieces."""
    return st.one_of(
        message(), text_pieces().map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=200)
    )
