import base64
from collections import Counter

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import nbtext
from nbtext.reading.mail import looks_like_mail, mail_tokens
from nbtext.reading.tokenize import DEFAULT_HEADERS, Tokenizer, text_tokens

import mail_reference
from conftest import real_corpus

GENERAL = {"preset": "general"}  # the general defaults (spam/ham labels would choose a spam filter's)


def tokens(message, headers=DEFAULT_HEADERS):
    return mail_tokens(message, headers, text_tokens)


HTML_1252 = (
    "<html><head><style>.hidden { color: red }</style><script>var tracker = 1;</script></head>"
    "<body><p>Na\u00efve fa\u00e7ade &amp; caf\u00e9</p><!-- secret comment -->"
    '<a href="http://Click.Example.com/buy?x=1">Buy now</a><img src="https://img.example.org/a.gif">'
    "</body></html>"
).encode("windows-1252")


def html_message():
    body = base64.encodebytes(HTML_1252)
    return (
        b"From spammer@example.com  Mon Jun 24 17:54:30 2002\n"
        b"From: Spammer <spammer@example.com>\n"
        b"To: you@example.net\n"
        b"Subject: =?utf-8?b?" + base64.b64encode("Gr\u00fc\u00dfe f\u00fcr dich".encode()) + b"?=\n"
        b"Date: Tue, 04 Jun 2002 11:09:20 -1900\n"
        b"Content-Type: text/html; charset=windows-1252\n"
        b"Content-Transfer-Encoding: base64\n\n" + body
    )


def test_base64_html_in_windows_1252():
    found = tokens(html_message())
    assert {"naïve", "façade", "café", "buy", "now"} <= set(found)
    assert {"url:click.example.com", "url:img.example.org"} <= set(found)
    assert not {"tracker", "hidden", "color", "secret", "comment", "href"} & set(found)
    assert {"subject:grüße", "subject:für", "subject:dich", "from:spammer", "to:you"} <= set(found)
    assert "content-type:html" in found and "content-type:windows" in found
    assert not any(t.startswith("date:") for t in found)  # only the chosen headers


def test_wrong_and_unknown_charsets_never_fail():
    latin1_as_utf8 = b"Subject: hi\nContent-Type: text/plain; charset=utf-8\n\ncaf\xe9 cr\xe8me ok\n"
    # the bytes are Latin-1, so each é/è becomes U+FFFD, which is no word character
    assert tokens(latin1_as_utf8) == [
        "subject:hi",
        "content-type:text",
        "content-type:plain",
        "content-type:charset",
        "content-type:utf",
        "caf",
        "cr",
        "me",
        "ok",
    ]
    unknown = b"Subject: hi\nContent-Type: text/plain; charset=x-no-such-charset\n\nplain words\n"
    assert tokens(unknown)[-2:] == ["plain", "words"]


def test_attachments_give_type_and_name_not_bytes():
    payload = base64.encodebytes(b"%PDF-1.4 secretpdfcontent " * 50).decode()
    message = (
        "From: a@example.com\nSubject: report\nMIME-Version: 1.0\n"
        'Content-Type: multipart/mixed; boundary="XYZ"\n\n'
        "preamble\n--XYZ\nContent-Type: text/plain\n\nsee attached\n"
        '--XYZ\nContent-Type: application/pdf; name="q3-report.pdf"\n'
        'Content-Disposition: attachment; filename="q3-report.pdf"\n'
        "Content-Transfer-Encoding: base64\n\n" + payload + "--XYZ--\nepilogue\n"
    ).encode()
    found = tokens(message)
    assert {"see", "attached", "attachment:application/pdf", "filename:q3", "filename:report", "filename:pdf"} <= set(
        found
    )
    assert "secretpdfcontent" not in found and "preamble" not in found


def test_nested_multipart_and_attached_message():
    inner = b"From: x@example.com\nSubject: inner\n\ninner words\n"
    message = (
        b'Subject: outer\nContent-Type: multipart/mixed; boundary="a"\n\n--a\n'
        b'Content-Type: multipart/alternative; boundary="b"\n\n--b\nContent-Type: text/plain\n\n'
        b"plain version\n--b\nContent-Type: text/html\n\n<p>html version</p>\n--b--\n"
        b"--a\nContent-Type: message/rfc822\n\n" + inner + b"--a--\n"
    )
    found = tokens(message)
    assert Counter(found)["version"] == 2 and {"plain", "html", "inner", "words"} <= set(found)


@pytest.mark.parametrize("garbage", [b"", b"\x00\xff" * 5000, bytes(range(256)) * 40, b"Subject: x\n\n\xff\xfe\xfd"])
def test_garbage_and_empty_messages_are_read_as_their_words(garbage):
    """Garbage is tokenized like any text (no mail to parse): the words it happens to hold,
    and with none, the prior alone."""
    clf = nbtext.train(
        ["Subject: a\n\nhello there", "Subject: b\n\ncheap pills"], ["ham", "spam"], min_count=1, **GENERAL
    )
    proba = clf.predict_proba([garbage])
    words = Tokenizer(input="text")(garbage)
    if garbage.startswith(b"Subject:"):
        words = Tokenizer(input="mail")(garbage)  # the 1-letter subject has no token: nothing
    assert clf.tokenize(garbage) == words
    expected = clf.predict_proba([" ".join(words)]) if words else np.exp(clf.class_log_prior)[None, :]
    np.testing.assert_allclose(proba, expected, rtol=1e-12)
    assert abs(proba.sum() - 1) < 1e-12


def test_a_20_megabyte_message():
    body = b"word " * (4 * 1024 * 1024)
    message = b"From: a@example.com\nSubject: big\nContent-Type: text/plain\n\n" + body
    assert len(message) > 20_000_000
    found = tokens(message)
    assert len(found) == 4 * 1024 * 1024 + 5  # the words, plus from:a, from:example, from:com, subject:big


def test_detection():
    assert looks_like_mail(b"From someone  Mon Jun 24 17:54:30 2002\nSubject: x\n\nbody")
    assert not looks_like_mail(b"From the desk of:\nJohn: hello\n\nbody")  # no date: no envelope (nbtext.reading.mbox)
    assert looks_like_mail(b"From: a@b.c\nSubject: x\n\nbody")
    assert looks_like_mail(b"Subject: x\n\nbody")
    assert not looks_like_mail(b"Note: buy milk\nand bread")
    assert not looks_like_mail(b"just some text: here\nmore")
    assert not looks_like_mail(b"one line only")
    assert not looks_like_mail(b"From tomorrow onwards eve 6 to 3 work.")  # an SMS, not an mbox
    assert not looks_like_mail(b"From here on\nthe text goes on")
    tokenizer = Tokenizer(input="text")
    assert tokenizer(b"Subject: xy\n\nbody") == ["subject", "xy", "body"]
    assert Tokenizer(input="auto")(b"Subject: xy\n\nbody") == ["subject:xy", "body"]
    assert Tokenizer(input="mail")(b"no header at all") == ["no", "header", "at", "all"]


def test_agrees_with_the_standard_library_on_real_mail():
    folder = real_corpus("spamassassin")
    files = sorted(folder.glob("*/*/*"))
    assert len(files) == 6047
    identical, similarity = 0, 0.0
    for path in files:
        data = path.read_bytes()
        ours = Counter(tokens(data))
        reference = Counter(mail_reference.mail_tokens(data, DEFAULT_HEADERS, text_tokens))
        identical += ours == reference
        union = sum((ours | reference).values())
        similarity += sum((ours & reference).values()) / union if union else 1.0
    # Where they differ, ours keeps what the reference loses (list footers after base64,
    # text after a stray '<!--'); see tests/mail_reference.py.
    assert identical / len(files) > 0.9
    assert similarity / len(files) > 0.99


_LINES = st.sampled_from(
    [
        "From the start",
        ">From quoted",
        ">>From twice",
        "From ",
        "Fromage",
        "> From: reply",
        "hello",
        "",
        "free cash",
        "From a@b Mon Jan  1 00:00:00 2024",
    ]
)


@settings(max_examples=200, deadline=None)
@given(body=st.lists(_LINES, max_size=12), rd=st.booleans())
def test_a_message_in_an_mbox_is_the_message_on_its_own(tmp_path_factory, body, rd):
    """The journal's key of a message read from an mbox (its `From ` lines quoted, mboxrd or
    mboxo) equals that of the same message stored on its own: forget of the mbox found no
    message learned from a Maildir when its body had a line starting `From `."""
    import re

    from nbtext.reading.documents import document_key, file_documents

    message = ("Subject: a\n\n" + "\n".join(body) + "\n").encode()
    quoted = re.sub(rb"^(>*From )" if rd else rb"^(From )", rb">\1", message, flags=re.MULTILINE)
    box = tmp_path_factory.mktemp("mbox") / "box.mbox"
    box.write_bytes(b"From x@y Mon Jan  1 00:00:00 2024\n" + quoted + b"\n")
    (read,) = list(file_documents(str(box)))
    assert document_key(read.data) == document_key(message)
    tokenize = Tokenizer(1, "auto", DEFAULT_HEADERS)
    assert tokenize(read.data) == tokenize(message)  # one message: the same tokens too (its key is of them)


_MESSAGE_LINES = st.sampled_from(
    [
        "Subject: free cash",
        "X-Note: a",
        "To: bob@example.com",
        "Content-Type: multipart/mixed; boundary=b",
        "Content-Type: text/html",
        "Content-Transfer-Encoding: quoted-printable",
        "Content-Transfer-Encoding: base64",
        " folded on",
        "--b",
        "--b--",
        "",
        "",
        "win=",
        "cash =3D now",
        "aGVsbG8gd29y",
        "bGQ=",
        "<p>hi <b>there</b></p>",
        "From the start",
        ">From quoted",
        "hello\r",
        "a\rb",
        "=\r",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(_MESSAGE_LINES, min_size=1, max_size=14),
    crlf=st.lists(st.booleans(), max_size=14),
    end=st.booleans(),
)
@example(lines=["X-Note: a", "", "To: bob@example.com"], crlf=[True, True], end=True)
def test_a_message_is_one_whatever_its_line_ends(lines, crlf, end):
    """Any of a document's LFs written CR LF (an IMAP client's copy, a Windows tool's, one
    mixed): the same journal key and the same tokens, read as mail or as text, so forgetting
    one copy takes back what learning the other added. The key was of the raw bytes, and the
    mail reader read a CR LF copy's header block otherwise in places (an `X-Note: a` block,
    then a blank line, then `To:`: mail or not depending on the line ends)."""
    from nbtext.reading.documents import document_key

    text = "\n".join(lines) + ("\n" if end else "")
    pieces = text.encode().split(b"\n")
    copy = pieces[0]
    for i, piece in enumerate(pieces[1:]):
        copy += (b"\r\n" if i < len(crlf) and crlf[i] and not copy.endswith(b"\r") else b"\n") + piece
    original = text.encode()
    assert document_key(copy) == document_key(original)
    for mode in ("auto", "mail", "text"):
        tokenize = Tokenizer(2, mode, DEFAULT_HEADERS)
        assert tokenize(copy) == tokenize(original) and tokenize.reads_as_mail(copy) == tokenize.reads_as_mail(original)


def test_a_lone_cr_is_no_line_end():
    """A message whose lines end in CR alone reads as one line (no reader of nbtext ends a
    line at a CR): it is another message, with its own key, not a copy of the LF one."""
    from nbtext.reading.documents import document_key

    message = b"Subject: cheap\n\nwin cash\n"
    assert document_key(message.replace(b"\n", b"\r")) != document_key(message)
    assert document_key(message.replace(b"\n", b"\r\n")) == document_key(message)
