"""The IMAP wire against a server that lies (tests/hostile_imap.py): what it sends is bounded
(a literal past what was asked is read in pieces and thrown away, its answers and lines have a
bound), a password never goes in clear text where it need not, the user's bad values are refused
before any connection and the server's as they arrive, and the server's own words reach stderr
without a terminal's control characters (docs/hostile-input.md, docs/mail.md)."""

import json
import os
import re
import socket
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings, strategies as st

import nbtext
from nbtext.cli.commands import cli
from nbtext.reading.imapurl import carried

from conftest import cpu_ratios, one_line_error
from dovecot_server import NBTEXT
from hostile_imap import HostileImap

PASSWORD = "pw-SECRET-31"
ENV = {"NBTEXT_IMAP_PASSWORD": PASSWORD, "NBTEXT_IMAP_PLAINTEXT_LOGIN": None, "NBTEXT_IMAP_PASSWORD_COMMAND": None}
SPAM, HAM = b"Subject: offer\r\n\r\ncheap pills cash prize\r\n", b"Subject: notes\r\n\r\nlunch meeting at noon\r\n"
HYPOTHESIS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "m.model"
    nbtext.train(
        ["cheap pills now", "win cash prize", "lunch at noon", "meeting notes"],
        ["spam", "spam", "ham", "ham"],
        min_count=1,
    ).save(str(path))
    return path


def invoke(*args, env=None):
    """nbtext ARGS in this process (the command line's own functions), the password in its variable."""
    return CliRunner().invoke(cli, [str(a) for a in args], env=ENV | (env or {}))


def scan(server, model, state, *options, folder="INBOX"):
    return invoke("imap-scan", "-m", model, "--move-to", "Junk", "--state", state, *options, server.url(folder))


def peak_memory(args, env):
    """(exit status, stdout, the peak resident memory in MiB) of a run of nbtext ARGS, started by
    a Python of its own that reports its child's peak (a child of this process would carry over
    this large process's peak: Linux keeps a process's largest size across fork and exec)."""
    env = {k: v for k, v in (os.environ | env).items() if v is not None}
    measured = (
        "import resource, subprocess, sys\n"
        "code = subprocess.run(sys.argv[1:]).returncode\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code, file=sys.stderr)"
    )
    run = subprocess.run([sys.executable, "-c", measured, NBTEXT, *map(str, args)], capture_output=True, env=env)
    peak, status = map(int, run.stderr.decode().rstrip("\n").rpartition("\n")[2].split())
    return status, run.stdout, peak / 1024


# --- 2: what the server sends is bounded -----------------------------------------------------
def test_a_literal_past_what_was_asked_is_read_in_pieces_and_thrown_away(model, tmp_path):
    """Asked for BODY.PEEK[]<0.1001>, the server sends a literal of 300 MB: imaplib read it whole
    (the run's peak memory grew by the literal's size). It is read in pieces, the first 1,001
    bytes kept: the message is the one a file of those bytes is under --max-bytes 1000, the
    message after it is read (the connection stays in step), and the run's memory stays small."""
    size = 300_000_000
    with HostileImap({1: size, 2: SPAM}) as server:
        status, out, peak = peak_memory(["predict", "--max-bytes", "1000", "-m", model, server.url()], ENV)
    assert status == 0
    (tmp_path / "x").write_bytes(b"x" * 5000)
    alone = subprocess.run([NBTEXT, "predict", "--max-bytes", "1000", "-m", model, tmp_path / "x"], capture_output=True)
    alone = alone.stdout.decode().split("\t", 1)[1]
    lines = out.decode().splitlines()
    assert [line.split("\t", 1)[1] for line in lines[:1]] == [alone.rstrip("\n")]
    assert len(lines) == 2 and lines[1].split("\t")[1] == "spam"
    assert peak < 150, f"{peak:.0f} MiB for a literal of {size / 2**20:.0f} MiB"


@HYPOTHESIS
@given(sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=6), max_bytes=st.integers(1, 2500))
def test_each_message_read_is_the_message_a_file_of_its_bytes_is(sizes, max_bytes):
    """Messages of generated sizes around --max-bytes: each Document holds the first max_bytes
    bytes the server sent (as a file's would), every message is read, in UID order."""
    from nbtext.reading.documents import new_run
    from nbtext.reading.imap import folder_documents
    from nbtext.reading.imapurl import ImapAccess

    new_run()
    held = {uid: bytes([65 + uid]) * size for uid, size in enumerate(sizes, 1)}
    with HostileImap(held) as server, pytest.warns() if max(sizes) > max_bytes else _nothing():
        documents = list(folder_documents(server.url(), max_bytes=max_bytes, access=ImapAccess("echo pw")))
    assert [d.data for d in documents] == [held[uid][:max_bytes] for uid in sorted(held)]


def read_and_scanned(model, state, sizes, lies, max_bytes):
    """A hostile server of messages of `sizes` whose listing says `lies` ({UID: size}), read by
    predict's imap:// reader and scanned (--dry-run) by imap-scan: each message reads as a file
    of its bytes does, and imap-scan names the same messages. The server, for what it was asked."""
    from nbtext.reading import documents, imap
    from nbtext.reading.imapurl import ImapAccess

    documents.new_run()
    held = {uid: bytes([65 + uid]) * size for uid, size in enumerate(sizes, 1)}
    with HostileImap(held) as server, pytest.warns() if max(sizes) > max_bytes else _nothing():
        server.sizes = {uid: size for uid, size in lies.items() if uid in held}
        read = list(imap.folder_documents(server.url(), max_bytes=max_bytes, access=ImapAccess("echo pw")))
        scanned = scan(server, model, state, "--max-bytes", max_bytes, "--dry-run")
    assert [d.data for d in read] == [held[uid][:max_bytes] for uid in sorted(held)]
    assert scanned.exit_code == 0, scanned.stderr
    assert [line.split("\t")[0] for line in scanned.stdout.splitlines()] == [d.name for d in read]
    server.held = held
    return server


@HYPOTHESIS
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=12),
    lies=st.dictionaries(st.integers(1, 12), st.integers(0, 4000)),
    max_bytes=st.integers(1, 2500),
)
@example(sizes=[2000] * 4, lies={}, max_bytes=2500)  # (one FETCH of 8,000 bytes before)
@example(sizes=[100] * 6, lies={2: 0, 3: 5000}, max_bytes=2500)  # (sizes that lie)
def test_each_fetch_asks_for_at_most_the_batch_bound(model, tmp_path_factory, monkeypatch, sizes, lies, max_bytes):
    """A folder's messages are fetched in batches of the one rule (in_batches): each UID FETCH
    asks for at most BATCH messages and BATCH_BYTES of their listed sizes (each counted up to
    --max-bytes + 1; one larger alone), for predict's imap:// reader and imap-scan alike; the
    messages read are the same, also where the listing lies about sizes (a FETCH asked for 200
    messages whatever their sizes: 200 x --max-bytes)."""
    from nbtext.reading import documents, imap

    bound, most = 4000, 5
    monkeypatch.setattr(documents, "BATCH_BYTES", bound)
    monkeypatch.setattr(imap, "BATCH", most)
    server = read_and_scanned(model, tmp_path_factory.mktemp("s") / "state", sizes, lies, max_bytes)
    held = server.held
    listed = {uid: server.sizes.get(uid, len(held[uid])) for uid in held}
    fetches = [line.split(b" ")[3] for line in server.said if b" UID FETCH " in line and b"BODY" in line]
    assert fetches
    for uid_set in fetches:
        uids = [int(u) for u in uid_set.split(b",")]
        asked = sum(min(listed[uid], max_bytes + 1) for uid in uids)
        assert len(uids) <= most and (asked <= bound or len(uids) == 1), (uids, asked)


@HYPOTHESIS
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=12),
    lies=st.dictionaries(st.integers(1, 12), st.integers(0, 3000)),
    max_bytes=st.integers(1, 2500),
)
@example(sizes=[2000] * 8, lies={u: 0 for u in range(1, 9)}, max_bytes=2500)  # (one FETCH kept 16,000 bytes)
def test_what_one_fetch_keeps_is_bounded_whatever_sizes_the_server_says(
    model, tmp_path_factory, monkeypatch, sizes, lies, max_bytes
):
    """A server that says every size short (RFC822.SIZE 0) had BATCH messages fetched at once,
    and the literal reader kept up to --max-bytes + 1 of each: 200 x --max-bytes in one FETCH.
    The literal bytes one FETCH keeps are at most fetch_bound (the batch's bound, or one
    message of --max-bytes + 1, plus FETCH_MARGIN), whatever the sizes said; a message past it
    is asked for again alone, so each message still reads as a file of its bytes does, for
    predict's imap:// reader and imap-scan alike."""
    from nbtext.reading import documents, imap, imapclient

    monkeypatch.setattr(documents, "BATCH_BYTES", 4000)
    monkeypatch.setattr(imap, "BATCH_BYTES", 4000)
    monkeypatch.setattr(imap, "FETCH_MARGIN", 100)
    bound = max(4000, max_bytes + 1) + 100
    kept = [0]  # the literal bytes each FETCH of messages kept
    read, command = imapclient.Bounded.read, imapclient.Bounded._command

    def counted_read(self, size):
        data = read(self, size)
        kept[-1] += len(data or b"")
        return data

    def counted_command(self, name, *arguments):
        kept.append(0 if "BODY" in " ".join(map(str, arguments)) else -(1 << 40))  # (others: not counted)
        return command(self, name, *arguments)

    monkeypatch.setattr(imapclient.Bounded, "read", counted_read)
    monkeypatch.setattr(imapclient.Bounded, "_command", counted_command)
    read_and_scanned(model, tmp_path_factory.mktemp("s") / "state", sizes, lies, max_bytes)
    assert max(kept) <= bound, (max(kept), bound)


def test_a_server_that_says_every_size_short_is_held_to_the_bound_of_one_fetch(model):
    """Sixty messages of 3 MB, each said to be of 0 bytes, read with --max-bytes 3000000: one
    FETCH of all sixty kept 180 MB before (a peak of 247 MiB); now one FETCH keeps fetch_bound
    (16 MiB and its margin), the rest asked for again alone, every message read."""
    server = subprocess.Popen(
        [sys.executable, os.path.join(os.path.dirname(__file__), "hostile_imap.py"), "0", "3000000", "60"],
        stdout=subprocess.PIPE,
    )
    try:
        port = int(server.stdout.readline())
        args = ["predict", "--max-bytes", "3000000", "-m", model, f"imap://alice@127.0.0.1:{port}/INBOX"]
        status, out, peak = peak_memory(args, ENV)
    finally:
        server.kill()
        server.wait()
        server.stdout.close()
    assert status == 0 and len(out.splitlines()) == 60
    assert peak < 180, f"{peak:.0f} MiB"


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exception):
        return False


def flooding(lines, where="listing"):
    """An answer hook: the UID listing's answer (or each fetch of `messages`) preceded by `lines`."""

    def answer(server, tag, command, arguments):
        if command == b"UID FETCH" and arguments.endswith(b"(UID RFC822.SIZE)") == (where == "listing"):
            server.out.writelines(line + b"\r\n" for line in lines)
        return False

    return answer


@pytest.mark.parametrize(
    "lines, said",
    [
        ([b"* OK " + b"a" * 999_000] * 40, "more than"),  # 40 MB of lines kept until the next command
        ([b"* 1 RECENT"] * 400_000, "more than"),  # a kind imaplib keeps for ever, never asked for
        ([b"* 1 FETCH (UID 1 BODY[] {" + b"9" * 5000 + b"}"], "digits"),  # int() of it raised ValueError
        ([b"* 1 FETCH (UID 1 BODY[] {4294967296}"], "digits"),  # more than IMAP's numbers
        ([b"* OK " + b"a" * 1_100_000], "a line longer"),
    ],
    ids=["long-lines", "many-lines", "literal-of-5000-digits", "literal-of-4GiB", "a-2MB-line"],
)
@pytest.mark.parametrize("command", ["predict", "imap-scan"])
@pytest.mark.parametrize("where", ["listing", "messages"])
def test_what_a_server_sends_past_a_bound_is_the_runs_error(model, tmp_path, lines, said, command, where):
    """A flood of answers, a literal announced larger than IMAP allows, a line longer than
    imaplib reads, in the listing's answer or the messages': one line, the run's error (the
    connection is out of step: no other command is sent on it), the scan's state left as it
    was; imaplib kept the flood, and raised ValueError on the literal. In the messages' answer
    imaplib raised the bound's error again as a refusal: each message was skipped by name as
    one the server refused, asked for again on the connection out of step, and imap-scan
    remembered them all as scanned (a spam never scanned again)."""
    state = tmp_path / "state"
    state.write_text(json.dumps({"version": 1, "folders": {"imap://a@h/X": {"uid_validity": 1, "last_uid": 3}}}))
    before = state.read_bytes()
    with HostileImap({1: SPAM, 2: HAM}) as server:
        server.answer = flooding(lines, where)
        if command == "predict":
            result = invoke("predict", "-m", model, server.url())
        else:
            result = scan(server, model, state)
    one_line_error(result, said)
    assert state.read_bytes() == before
    assert len([line for line in server.said if b" UID FETCH " in line and b"BODY" in line]) <= 1


# --- a listing holds no more UIDs than the folder can --------------------------------------
def listed_as(lines):
    """An answer hook: the UID listing's answer is `lines` (FETCH lines as they come)."""

    def answer(server, tag, command, arguments):
        if command == b"UID FETCH" and arguments.endswith(b"(UID RFC822.SIZE)"):
            server.out.writelines(line + b"\r\n" for line in lines)
            server.send(tag + b" OK done")
            return True
        return False

    return answer


@HYPOTHESIS
@given(
    said=st.lists(st.tuples(st.integers(1, 30), st.sampled_from(["size", "flags", "none"])), min_size=1, max_size=40),
    exists=st.integers(1, 30),
    uid_next=st.one_of(st.none(), st.integers(31, 60)),
    after=st.integers(0, 12),
    command=st.sampled_from(["predict", "imap-scan"]),
)
@example(said=[(u, "size") for u in range(1, 8)], exists=4, uid_next=None, after=0, command="predict")
@example(said=[(u, "size") for u in (1, 2, 3, 3, 2)], exists=3, uid_next=None, after=0, command="imap-scan")
@example(said=[(u, "size") for u in (9, 3, 5, 7)], exists=4, uid_next=31, after=0, command="predict")
@example(said=[(u, "size") for u in range(4, 10)], exists=30, uid_next=31, after=26, command="imap-scan")
def test_a_listing_holds_no_more_uids_than_the_folder_can(
    model, tmp_path_factory, said, exists, uid_next, after, command
):
    """Generated listings (UIDs in any order, said again, with a size, as a flag update or bare),
    EXISTS and UIDNEXT: the distinct UIDs above the scan's last are at most what the server said
    the folder holds (its EXISTS; below its UIDNEXT, the numbers after the last scanned) and then
    are read, in UID order; one more is refused in one line for that folder (nothing fetched,
    the state of the scan's other folders as it was). Before, a listing held whatever lines the
    server sent: EXISTS 4294967295 and 2 million UID lines held 178 MB."""
    state = tmp_path_factory.mktemp("s") / "state"
    lines = [
        b"* %d FETCH (%s)"
        % (n, {"size": b"UID %d RFC822.SIZE 30", "flags": b"FLAGS (\\Seen) UID %d", "none": b"UID %d"}[how] % uid)
        for n, (uid, how) in enumerate(said, 1)
    ]
    held = {uid: HAM for uid, _ in said}
    distinct = {uid for uid, _ in said if uid > (after if command == "imap-scan" else 0)}
    most = min(exists, (uid_next or 31) - 1 - (after if command == "imap-scan" else 0))
    with HostileImap(held) as server:
        server.exists, server.uid_next, server.answer = exists, uid_next or 31, listed_as(lines)
        if command == "predict":
            result = invoke("predict", "-m", model, server.url())
        else:
            remembered = {"uid_validity": 7, "last_uid": after}
            other = {"uid_validity": 1, "last_uid": 3}
            state.write_text(json.dumps({"version": 1, "folders": {server.url(): remembered, "imap://a@h/X": other}}))
            result = scan(server, model, state)
    if len(distinct) > most:
        one_line_error(result, "the server listed more messages than the folder holds")
        assert not [line for line in server.said if b"BODY" in line]
        if command == "imap-scan":
            assert json.loads(state.read_text())["folders"]["imap://a@h/X"] == other
    else:
        assert result.exit_code == 0, result.stderr
        assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [
            f"{server.url()}/;UID={uid}" for uid in sorted(distinct)
        ]


def test_the_listing_of_a_server_that_says_no_exists_is_refused(model):
    """RFC 3501 6.3.1: EXAMINE and SELECT say EXISTS; without it nothing bounds the listing."""

    def without_exists(server, tag, command, arguments):
        if command in (b"EXAMINE", b"SELECT"):
            server.send(b"* OK [UIDVALIDITY 7] v", b"* OK [UIDNEXT 2] n", tag + b" OK [READ-ONLY] done")
            return True
        return False

    with HostileImap({1: SPAM}) as server:
        server.answer = without_exists
        one_line_error(invoke("predict", "-m", model, server.url()), "did not say how many messages")


@pytest.mark.filterwarnings("default::UserWarning")
@pytest.mark.parametrize("exists", [(1 << 32) - 1, 199_999])
def test_a_flood_of_uid_lines_is_held_by_the_folders_bound_not_by_its_lines(model, tmp_path, exists):
    """The attacker's listing: EXISTS and UIDNEXT 4294967295 and 200,000 UID lines (then no
    message sent: each batch "deleted meanwhile"), or one line more than EXISTS, refused in one
    line. The listing is read as it arrives, 12 bytes a UID: the run's peak memory stays small
    (before, every line was kept, then a dict and a list of its pairs: 2 million lines, 495 MB)."""
    n = 200_000
    server = subprocess.Popen(
        [
            sys.executable,
            os.path.join(os.path.dirname(__file__), "hostile_imap.py"),
            "0",
            "--flood",
            str(n),
            str(exists),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        port = int(server.stdout.readline())
        status, out, peak = peak_memory(["predict", "-m", model, f"imap://alice@127.0.0.1:{port}/INBOX"], ENV)
    finally:
        server.kill()
        server.wait()
        server.stdout.close()
    assert (status, out) == (0 if exists > n else 1, b"")
    assert peak < 60, f"{peak:.0f} MiB for a listing of {n:,} UIDs"


# Lines of a listing's answer that list no new UID (a server sends them as fast as the reader
# takes them, for as long as the answer's deadline lasts)
LISTING_JUNK = {
    "no UID": b"* 1 FETCH (FLAGS (\\Seen))",
    "a UID said again": b"* 1 FETCH (UID 1 RFC822.SIZE 40)",
    "a UID below the one asked from": b"* 1 FETCH (UID 1 RFC822.SIZE 40)",
    "a continuation": b"+ go on",
}


@pytest.mark.parametrize("junk", LISTING_JUNK)
def test_an_answer_of_lines_that_list_nothing_new_is_bounded_by_its_bytes(model, tmp_path, monkeypatch, junk):
    """Attack 58: a listing's lines are read as they arrive and kept nowhere (the folder's UIDs:
    12 bytes each, at most what its EXISTS and UIDNEXT allow); a line that listed no new UID
    (none, one said again, one at or below the scan's last) and a continuation line (`+ ...`,
    which imaplib reads and drops) counted toward no bound: a server saying EXISTS 4294967295
    (the deadline: days) could send them at full speed for as long as it liked. Here 2 MiB of
    them, the answers' bound (ANSWER_BYTES) made 64 KiB: the run's error in one line, the
    state as it was. (Before: read whole, exit 0.)"""
    from nbtext.reading import imapclient

    monkeypatch.setattr(imapclient, "ANSWER_BYTES", 1 << 16)
    state = tmp_path / "state"
    before = {"version": 1, "folders": {}}

    def endless(server, tag, said, arguments):
        if said != b"UID FETCH" or not arguments.endswith(b"(UID RFC822.SIZE)"):
            return False
        line = LISTING_JUNK[junk] + b"\r\n"
        for _ in range((2 << 20) // len(line)):
            server.out.write(line)
        server.send(b"* 2 FETCH (UID 2 RFC822.SIZE 40)", tag + b" OK done")
        return True

    with HostileImap({1: SPAM, 2: HAM}) as server:
        server.exists, server.uid_next, server.answer = 4294967295, 4294967295, endless
        if junk == "a UID below the one asked from":
            before["folders"][server.url()] = {"uid_validity": 7, "last_uid": 1}
        state.write_text(json.dumps(before))
        result = scan(server, model, state)
    one_line_error(result, "bytes of answers to one command")
    assert json.loads(state.read_text()) == before


# --- 3: no password in clear text where it need not ------------------------------------------
def test_a_server_that_says_logindisabled_is_sent_no_password(model, tmp_path):
    """LOGINDISABLED without TLS (RFC 3501: the client must not LOGIN): one line saying to read
    imaps://, and neither LOGIN nor AUTHENTICATE sent, the password not even asked for; a
    password that needs AUTHENTICATE PLAIN (not ASCII) neither."""
    asked = tmp_path / "asked"
    for password in ["ascii", "pässword"]:
        with HostileImap() as server:
            server.capabilities = "IMAP4rev1 LOGINDISABLED AUTH=PLAIN"
            result = invoke(
                "predict", "--password-command", f"touch {asked}; echo {password}", "-m", model, server.url()
            )
        one_line_error(result, "imaps://")
        assert not [line for line in server.said if b"LOGIN" in line or b"AUTHENTICATE" in line]
        assert not asked.exists()


@pytest.fixture
def named_hosts(monkeypatch):
    """Host names of this process that reach 127.0.0.1 (the hostile server listens there only)."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *rest, **named):
        return real("127.0.0.1" if host in ("mail.example.org", "other.example.org") else host, *rest, **named)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_password_goes_in_clear_text_only_to_loopback_or_a_host_the_user_named(model, named_hosts):
    """imap:// to a server that offers no STARTTLS: the password went in a plain LOGIN. Refused
    now in one line that says what to do, no LOGIN sent, unless the host is loopback or named by
    --plaintext-login (or $NBTEXT_IMAP_PLAINTEXT_LOGIN)."""
    with HostileImap({1: SPAM}) as server:
        for options, env, reads in [
            ([], {}, False),
            (["--plaintext-login", "other.example.org"], {}, False),
            (["--plaintext-login", "MAIL.example.org"], {}, True),
            ([], {"NBTEXT_IMAP_PLAINTEXT_LOGIN": "other.example.org, mail.example.org"}, True),
        ]:
            server.said.clear()
            result = invoke("predict", *options, "-m", model, server.url(host="mail.example.org"), env=env)
            logged_in = [line for line in server.said if b" LOGIN " in line]
            if reads:
                assert result.exit_code == 0 and len(result.stdout.splitlines()) == 1, result.stderr
                assert logged_in
            else:
                one_line_error(result, "--plaintext-login mail.example.org")
                assert "imaps://alice@mail.example.org" in result.stderr and not logged_in
        for host in ["127.0.0.1", "localhost"]:
            assert invoke("predict", "-m", model, server.url(host=host)).exit_code == 0


@pytest.mark.parametrize(
    "host, allowed",
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("localhost.", False),  # (an absolute name: asked of DNS, not /etc/hosts)
        ("localhost.example.org", False),
        ("127.0.0.1.example.org", False),
        ("10.0.0.1", False),
        ("::ffff:8.8.8.8", False),
        ("mail.example.org", False),
    ],
)
def test_the_rule_of_a_password_in_clear_text(host, allowed, monkeypatch):
    from nbtext.reading.imapurl import DEFAULT_ACCESS, ImapAccess, in_clear_allowed

    monkeypatch.delenv("NBTEXT_IMAP_PLAINTEXT_LOGIN", raising=False)
    assert in_clear_allowed(host, DEFAULT_ACCESS) is allowed
    assert in_clear_allowed(host, ImapAccess(plaintext_login=(host,)))


# --- an IPv6 host is shown in brackets ------------------------------------------------------
@HYPOTHESIS
@given(
    address=st.ip_addresses(v=6).map(str) | st.sampled_from(["::1", "0:0:0:0:0:0:0:1", "fe80::1%eth0", "FE80::A"]),
    port=st.one_of(st.none(), st.integers(1, 65535)),
    scheme=st.sampled_from(["imap", "imaps"]),
)
def test_an_ipv6_hosts_url_is_read_and_shown_in_brackets(address, port, scheme):
    """imap://[ADDRESS]:PORT/INBOX (RFC 3986's form; a zone's % as %25, RFC 6874) names the
    address and the port, and every way a message shows the server (its URL, HOST:PORT,
    SCHEME://HOST:PORT, USER@HOST) reads back as that address and port: `imap://::1:143` did not
    (its last colon is no port's)."""
    from urllib.parse import urlsplit

    from nbtext.reading.imapurl import PORTS, parse

    written = address.lower().replace("%", "%25")
    folder = parse(f"{scheme}://alice@[{written}]{'' if port is None else f':{port}'}/INBOX")
    assert (folder.host, folder.port) == (address.lower(), port)
    assert parse(folder.url) == folder
    for shown in [folder.url, folder.where, f"{scheme}://{folder.server}", f"{scheme}://{folder.account}:1/"]:
        said = urlsplit(shown)
        assert said.hostname == written and said.port in (port, port or PORTS[scheme], 1), shown


@pytest.mark.parametrize("host", ["[v7.x]", "[127.0.0.1]", "[mail.example.org]", "[::1", "::1"])
def test_a_host_in_brackets_that_is_no_ipv6_address_is_refused(model, host):
    one_line_error(invoke("predict", "-m", model, f"imap://alice@{host}:143/INBOX"), "not an IMAP URL")


@pytest.mark.parametrize("failure", ["read", "no folder", "login", "refused"])
@pytest.mark.parametrize("command", ["predict", "imap-scan"])
def test_a_server_at_an_ipv6_address_is_named_in_brackets(model, tmp_path, failure, command):
    """A server on ::1, end to end: its messages' names and every line that names the server
    (no such folder on [::1]:PORT, login failed at imap://[::1]:PORT, cannot connect to it) hold
    the address in brackets; they held `::1:PORT`."""

    def answer(server, tag, said, arguments):
        if failure == "no folder" and said in (b"EXAMINE", b"SELECT"):
            server.send(tag + b" NO no such folder")
        elif failure == "login" and said == b"LOGIN":
            server.send(tag + b" NO wrong")
        else:
            return False
        return True

    with HostileImap({1: SPAM, 2: HAM}, host="::1") as server:
        server.answer = answer
        url = server.url()
        if failure == "refused":
            server.server.server_close()
        if command == "predict":
            result = invoke("predict", "-m", model, url)
        else:
            result = scan(server, model, tmp_path / "state")
    assert url.startswith("imap://alice@[::1]:")
    said = result.stdout + result.stderr
    assert f"[::1]:{server.port}" in said and f"::1:{server.port}" not in said.replace("[::1]", ""), said
    if failure == "read":
        assert result.exit_code == 0, result.stderr
        assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [f"{url}/;UID={u}" for u in (1, 2)]
    else:
        one_line_error(
            result, {"no folder": "no such folder on", "login": "login failed", "refused": "cannot"}[failure]
        )


# --- RFC 5092's ;UIDVALIDITY= is honoured -----------------------------------------------------
@HYPOTHESIS
@given(
    pinned=st.integers(1, (1 << 32) - 1) | st.sampled_from([7, 8]),
    spelling=st.sampled_from([";UIDVALIDITY={}", ";uidvalidity={}", "/;UIDVALIDITY={}", ";UidValidity={}/"]),
    command=st.sampled_from(["predict", "imap-scan", "imap-scan --keyword $Junk"]),
)
def test_a_urls_uidvalidity_is_honoured(model, tmp_path_factory, pinned, spelling, command):
    """`imap://alice@host/INBOX;UIDVALIDITY=N` (RFC 5092) was read as INBOX whatever its
    UIDVALIDITY. A folder whose UIDVALIDITY is the URL's is read (and scanned: its messages
    named and remembered by the folder's URL, the same with and without it); any other is
    refused in one line, nothing fetched, flagged or moved and the scan's state as it was. The
    folder spam is moved to has a UIDVALIDITY of its own, never the URL's."""
    state = tmp_path_factory.mktemp("s") / "state"
    state.write_text(json.dumps({"version": 1, "folders": {"imap://a@h/X": {"uid_validity": 1, "last_uid": 3}}}))
    before = state.read_bytes()
    with HostileImap({1: SPAM, 2: HAM}) as server:
        url = server.url("INBOX" + spelling.format(pinned))
        if command == "predict":
            result = invoke("predict", "-m", model, url)
        else:
            result = invoke(*command.split(), "-m", model, "--move-to", "Junk", "--state", state, url)
    if pinned == 7:  # (the hostile server's UIDVALIDITY)
        assert result.exit_code == 0, result.stderr
        names = [line.split("\t")[0] for line in result.stdout.splitlines()]
        assert names == [f"{server.url()}/;UID={uid}" for uid in (1, 2)]
        if command != "predict":
            assert json.loads(state.read_text())["folders"][server.url()] == {"uid_validity": 7, "last_uid": 2}
            assert [line for line in server.said if b" STORE 1 +FLAGS.SILENT" in line]  # (spam, acted on)
    else:
        one_line_error(result, f"the folder's UIDVALIDITY is 7, not the URL's {pinned}")
        assert not [line for line in server.said if re.search(rb" (FETCH .*BODY|STORE|MOVE|COPY|EXPUNGE) ", line)]
        assert state.read_bytes() == before


@pytest.mark.parametrize(
    "tail",
    [
        ";UIDVALIDITY=0",
        ";UIDVALIDITY=4294967296",
        ";UIDVALIDITY=x",
        ";UIDVALIDITY=",
        ";FOO=1",
        ";UIDVALIDITY=7;X=1",
        "?SUBJECT%20cash",
        ";UIDVALIDITY=7?ALL",
    ],
)
def test_what_else_a_url_says_after_a_folders_name_is_refused_before_any_connection(model, tail):
    """After the folder's name only ;UIDVALIDITY=N is read: a value IMAP has no such number for,
    another parameter, or RFC 5092's search (`?...`, read before as part of the name) is refused
    in one line, the server never reached."""
    with HostileImap() as server:
        result = invoke("predict", "-m", model, server.url("INBOX" + tail))
        one_line_error(result, "only whole folders are read" if "?" in tail else "only ;UIDVALIDITY=N")
        assert server.connections == 0


# --- 4: bad values refused in one line -------------------------------------------------------
CONTROL = st.characters(categories=["Cc"])


@HYPOTHESIS
@given(
    where=st.sampled_from(["user", "folder"]),
    before=st.text(st.characters(min_codepoint=48, max_codepoint=122), max_size=4),
    control=CONTROL,
    after=st.text(st.characters(min_codepoint=48, max_codepoint=122), max_size=4),
)
def test_a_control_character_in_a_urls_user_or_folder_is_refused_before_any_connection(
    model, where, before, control, after
):
    """`imap://alice%0D%0Ax%20LOGOUT@host/INBOX`: imaplib sent the user name as it was, and the
    CR LF in it sent a command of the URL's own (with the password after it). A user or folder
    name holding a control character (or bytes not UTF-8) is refused in one line, before any
    connection."""
    from urllib.parse import quote

    name = quote(before + control + after, safe="")
    with HostileImap() as server:
        user, folder = (name, "INBOX") if where == "user" else ("alice", name)
        result = invoke("predict", "-m", model, server.url(folder, user=user))
        one_line_error(result, f"its {where} name holds a control character")
        assert server.connections == 0


@HYPOTHESIS
@given(
    host=st.text(st.characters(blacklist_characters="@/:[]%?#;"), min_size=1, max_size=80)
    | st.builds("[fe80::1%25{}]".format, st.text(st.characters(blacklist_characters="@/[]%?#;"), max_size=80))
)
def test_a_urls_host_is_one_the_resolver_takes_or_refused_in_one_line(host):
    """The host of any URL that parses is one the resolver can be given (its IDNA form exists:
    socket's idna codec raised UnicodeError, a traceback, for a..b or a label past 63 bytes) and
    carries no control character (ESC c reached stderr raw in `cannot connect to ...`), an
    IPv6 address's zone as well; any other is refused by parse in one line that shows no
    control character."""
    from nbtext.errors import NbtextError
    from nbtext.reading.imapurl import parse

    try:
        folder = parse(f"imap://me@{host}/INBOX")
    except NbtextError as e:
        assert not re.search(r"[\x00-\x1f\x7f-\x9f]", str(e)), repr(str(e))
        return
    folder.host.encode("idna")
    assert not re.search(r"[\x00-\x1f\x7f-\x9f]", folder.where), repr(folder.where)


def percent_encoded(text, chosen):
    """`text`'s UTF-8 bytes, those at the places `chosen` (a list of booleans, cycled) written %XX."""
    said = text.encode("utf-8", "surrogateescape")
    return "".join(
        f"%{byte:02X}" if chosen[n % len(chosen)] or byte > 0x7F else chr(byte) for n, byte in enumerate(said)
    )


@settings(max_examples=200, deadline=None)
@given(
    labels=st.lists(
        st.text(
            st.characters(whitelist_categories=["Ll", "Lu", "Nd"]) | st.sampled_from("-_"), min_size=1, max_size=12
        ),
        min_size=1,
        max_size=4,
    ),
    chosen=st.lists(st.booleans(), min_size=1, max_size=8),
)
@example(labels=["ex", "ample", "org"], chosen=[False, False, True, False])  # (imap://me@ex%61mple.org/INBOX)
def test_a_percent_encoded_host_is_the_host_it_encodes(labels, chosen):
    """Noticed in session 59: `imap://me@ex%61mple.org/INBOX` gave the resolver (and the TLS
    check, and state_key) `ex%61mple.org` as typed. RFC 5092's host is RFC 3986's: its bytes
    percent-encoded are decoded before anything uses it. Generated: a host name written with any
    of its bytes %XX reads as the host written plainly (both refused alike where it is no name)."""
    from nbtext.errors import NbtextError
    from nbtext.jobs.imapscan import state_key
    from nbtext.reading.imapurl import parse

    host = ".".join(labels)
    try:
        plain = parse(f"imap://me@{host}/INBOX")
    except NbtextError:
        with pytest.raises(NbtextError, match="its host is no name a server can have"):
            parse(f"imap://me@{percent_encoded(host, chosen)}/INBOX")
        return
    folder = parse(f"imap://me@{percent_encoded(host, chosen)}/INBOX")
    assert folder == plain and "%" not in folder.host and state_key(folder) == state_key(plain)


@HYPOTHESIS
@given(
    host=st.text(min_size=1, max_size=30),
    chosen=st.lists(st.booleans(), min_size=1, max_size=8),
    bytes_not_utf8=st.lists(st.integers(0x80, 0xFF), max_size=2),
)
def test_a_percent_encoded_host_is_decoded_then_checked_as_any_host(host, chosen, bytes_not_utf8):
    """Generated: any text as a host, any of its bytes percent-encoded (and bytes that are no
    UTF-8 among them): parse gives a host free of `%`, URL delimiters, spaces and control
    characters that the resolver takes (its IDNA form exists), or refuses the URL in one line
    showing no control character. (The zone of an IPv6 address in brackets keeps its %.)"""
    from nbtext.errors import NbtextError
    from nbtext.reading.imapurl import parse

    encoded = percent_encoded(host, chosen) + "".join(f"%{byte:02X}" for byte in bytes_not_utf8)
    try:
        folder = parse(f"imap://me@{encoded}/INBOX")
    except NbtextError as e:
        assert "\n" not in str(e) and not re.search(r"[\x00-\x1f\x7f-\x9f]", str(e)), repr(str(e))
        return
    assert carried(folder.host) and not re.search(r"[\s%/:?#\[\]@\\]", folder.host), repr(folder.host)
    folder.host.encode("idna")


@HYPOTHESIS
@given(
    user=st.text(st.characters(whitelist_categories=["Ll", "Nd"]), min_size=1, max_size=6),
    host=st.text(st.characters(whitelist_categories=["Ll", "Nd"]) | st.just("."), min_size=1, max_size=12),
    where=st.sampled_from(["user", "host"]),
    at=st.integers(0, 12),
    mark=st.sampled_from("?#"),
)
@example(user="u", host="example.org", where="host", at=2, mark="?")  # (imap://u@ex?ample.org/INBOX)
@example(user="ux", host="example.org", where="user", at=1, mark="?")  # (imap://u?x@example.org/INBOX)
def test_a_question_mark_or_hash_in_user_at_host_is_refused_in_one_line(user, host, where, at, mark):
    """`imap://u@ex?ample.org/INBOX` was read as the host `ex` (urlsplit ends the server's part
    at ? and #), and `imap://u?x@example.org/INBOX` as the host `u`: the password went to
    another server than the one written. Generated: a ? or # anywhere in USER@HOST is refused by
    parse in one line."""
    from nbtext.errors import NbtextError
    from nbtext.reading.imapurl import parse

    user, host = (user[:at] + mark + user[at:], host) if where == "user" else (user, host[:at] + mark + host[at:])
    with pytest.raises(NbtextError, match=r"a \? or # ends USER@HOST"):
        parse(f"imap://{user}@{host}/INBOX")


def test_a_user_name_not_utf8_is_refused_and_one_of_spaces_logs_in(model):
    with HostileImap() as server:
        one_line_error(invoke("predict", "-m", model, server.url(user="al%FFice")), "not UTF-8")
        assert server.connections == 0
        assert invoke("predict", "-m", model, server.url(user='a%20"b')).exit_code == 0
    assert b' LOGIN "a \\"b" ' in b"".join(server.said)  # (a quoted string: one argument)


@HYPOTHESIS
@given(keyword=st.text(min_size=1, max_size=8).filter(lambda k: not k.isascii() or not k.isprintable() or " " in k))
def test_a_keyword_imap_cannot_carry_is_refused_before_any_connection(model, tmp_path_factory, keyword):
    """A non-ASCII --keyword (`späm`) was accepted and raised UnicodeEncodeError in imaplib at
    the STORE, a traceback; one of control characters or spaces the same in one line."""
    state = tmp_path_factory.mktemp("s") / "state"
    with HostileImap({1: SPAM}) as server:
        result = invoke("imap-scan", "-m", model, "--keyword", keyword, "--state", state, server.url())
        one_line_error(result, "is not an IMAP keyword")
        assert server.connections == 0


@HYPOTHESIS
@given(
    before=st.text(max_size=3).filter(carried),
    control=st.sampled_from(["\x1b]0;X\x07", "\r\n", "\x00", "\x7f", "\x9b", "\udcff"]),
    after=st.text(max_size=3).filter(carried),
)
def test_a_move_to_folder_imap_cannot_carry_is_refused_before_any_connection(
    model, tmp_path_factory, before, control, after
):
    """`--move-to` holding a control character (an OSC sequence, a CR LF) went to the server
    and came back raw in the scan's summary on stderr, where the URL's own folder name so made
    is refused: the user's folder names, either way, are refused in one line before any
    connection."""
    state = tmp_path_factory.mktemp("s") / "state"
    with HostileImap({1: SPAM}) as server:
        result = invoke("imap-scan", "-m", model, "--move-to", before + control + after, "--state", state, server.url())
        one_line_error(result, "holds a control character")
        assert server.connections == 0


def test_an_atom_keyword_is_given(model, tmp_path):
    with HostileImap({1: SPAM}) as server:
        result = invoke("imap-scan", "-m", model, "--keyword", "$Junk~1", "--state", tmp_path / "s", server.url())
    assert result.exit_code == 0, result.stderr
    assert [line for line in server.said if b"STORE 1 +FLAGS.SILENT ($Junk~1)" in line]


LIES = {
    "UID 0": dict(listing=[b"* 1 FETCH (UID 0)"]),
    "UID 2^32": dict(listing=[b"* 1 FETCH (UID 4294967296)"]),
    "UID of 5000 digits": dict(listing=[b"* 1 FETCH (UID " + b"7" * 5000 + b")"]),
    "UID at UIDNEXT": dict(listing=[b"* 1 FETCH (UID 1)", b"* 2 FETCH (UID 9)"], uid_next=9),
    "UIDVALIDITY 0": dict(uid_validity=b"0"),
    "UIDVALIDITY 2^32": dict(uid_validity=b"4294967296"),
    "UIDVALIDITY not a number": dict(uid_validity=b"x7"),
    "UIDNEXT 2^33": dict(uid_next=1 << 33),
    "EXISTS of 5000 digits": dict(exists=b"9" * 5000),
}


@pytest.mark.parametrize("lie", LIES)
@pytest.mark.parametrize("command", ["predict", "imap-scan"])
def test_a_server_that_lies_about_uids_is_the_runs_error_and_the_state_is_untouched(model, tmp_path, lie, command):
    """A UID outside 1..2^32-1 or not below UIDNEXT, a UIDVALIDITY or UIDNEXT no such number:
    a UID of 2^32 was written to the scan's state, which then refused to load for every folder
    it held; one of 5000 digits raised ValueError. Now one line, the run's error, no message
    fetched and the state file as it was."""
    state = tmp_path / "state"
    state.write_text(json.dumps({"version": 1, "folders": {"imap://a@h/X": {"uid_validity": 1, "last_uid": 3}}}))
    before = state.read_bytes()
    with HostileImap({1: SPAM, 2: HAM}) as server:
        for name, value in LIES[lie].items():
            setattr(server, name, value)
        result = invoke("predict", "-m", model, server.url()) if command == "predict" else scan(server, model, state)
    one_line_error(result, "IMAP" if "UID " not in lie else "no message can have")
    assert state.read_bytes() == before
    assert not [line for line in server.said if b"BODY" in line]


def test_mail_that_arrives_while_a_folder_is_listed_is_not_a_lie(model, tmp_path):
    """A UID at or above the UIDNEXT of the EXAMINE is a new message when the server said the
    folder grew (`* N EXISTS`) meanwhile."""

    def arrived(server, tag, command, arguments):
        if command == b"UID FETCH" and arguments.endswith(b"(UID RFC822.SIZE)"):
            server.send(
                b"* 3 EXISTS", b"* 1 FETCH (UID 1)", b"* 2 FETCH (UID 2)", b"* 3 FETCH (UID 3)", tag + b" OK done"
            )
            return True
        return False

    with HostileImap({1: SPAM, 2: HAM, 3: SPAM}) as server:
        server.uid_next, server.answer = 3, arrived
        result = invoke("predict", "-m", model, server.url())
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 3, result.stderr


@pytest.mark.parametrize("messages", [{1: SPAM, 2: HAM, 3: SPAM}, {5: HAM, 9: SPAM}])
def test_a_folder_renumbered_without_a_new_uidvalidity_is_scanned_again_from_its_start(model, tmp_path, messages):
    """Attack 58: a server whose UIDNEXT is at or below the last UID scanned, under the same
    UIDVALIDITY, renumbered its messages without saying so (RFC 3501 2.3.1.1 forbids it: a
    restored backup, an index rebuilt). imap-scan listed only the UIDs above its last, none,
    and said 0 new messages on every run while the new mail under the old UIDs went unscanned
    for good. Now such a folder is scanned again from its start, as one of a new UIDVALIDITY
    (UIDNEXT here one above the highest UID: 4, 10)."""
    state = tmp_path / "state"
    with HostileImap(messages) as server:
        state.write_text(json.dumps({"version": 1, "folders": {server.url(): {"uid_validity": 7, "last_uid": 10}}}))
        result = scan(server, model, state)
    assert result.exit_code == 0, result.stderr
    assert [int(line.split("\t")[0].rsplit("=", 1)[1]) for line in result.stdout.splitlines()] == sorted(messages)
    assert json.loads(state.read_text())["folders"][server.url()] == {
        "uid_validity": 7,
        "last_uid": max(messages),
    }


@pytest.mark.filterwarnings("default::UserWarning")  # the command line says it as one line
def test_a_scan_past_the_largest_uid_says_so(model, tmp_path):
    """A folder whose last UID scanned is 4294967295, the largest: the next scan asked for
    `4294967296:*` (no such number) and silently read nothing, for ever. Now no such range is
    asked for, and a warning line says why nothing can be scanned there."""
    state = tmp_path / "state"
    with HostileImap({5: HAM, (1 << 32) - 1: SPAM}) as server:
        first = scan(server, model, state)
        assert first.exit_code == 0, first.stderr
        assert list(json.loads(state.read_text())["folders"].values())[0]["last_uid"] == (1 << 32) - 1
        server.said.clear()
        again = scan(server, model, state)
    assert again.exit_code == 0 and "4294967295, the largest" in again.stderr, again.stderr
    assert not [line for line in server.said if b"4294967296" in line]


# --- 5: the server's words reach stderr without control characters ---------------------------
WORDS = st.binary(min_size=1, max_size=80).map(
    lambda b: b.replace(b"\n", b" ").replace(b"\r", b" ") + b"\x1b]0;owned\x07"
)


def refusing(where, words):
    """An answer hook: the server says `words` (NO's reason, or BYE) at `where`."""

    def answer(server, tag, command, arguments):
        if where == "EXAMINE" and command in (b"EXAMINE", b"SELECT"):
            server.send(tag + b" NO " + words)
        elif where == "BYE" and command == b"UID FETCH" and arguments.endswith(b"(UID RFC822.SIZE)"):
            server.send(b"* BYE " + words)
            return True
        elif where == "FETCH" and command == b"UID FETCH" and b"BODY" in arguments:
            server.send(tag + b" NO " + words)
        elif where == "BAD" and command == b"UID FETCH" and arguments.endswith(b"(UID RFC822.SIZE)"):
            server.send(tag + b" BAD " + words)
        else:
            return False
        return True

    return answer


@HYPOTHESIS
@given(
    words=WORDS,
    where=st.sampled_from(["EXAMINE", "BYE", "FETCH", "BAD"]),
    command=st.sampled_from(["predict", "imap-scan"]),
)
def test_the_servers_words_reach_stderr_without_control_characters(model, tmp_path_factory, words, where, command):
    """A server's NO, BAD or BYE text holding an OSC sequence (`ESC ] 0 ; title BEL`) set the
    terminal's title from an error line; every character of stderr is now printable (C0, DEL
    and C1 shown as `?`)."""
    state = tmp_path_factory.mktemp("s") / "state"
    with HostileImap({1: SPAM}) as server:
        server.answer = refusing(where, words)
        result = invoke("predict", "-m", model, server.url()) if command == "predict" else scan(server, model, state)
    assert result.exit_code != 0 and result.stderr, result.stderr
    assert all(line.isprintable() for line in result.stderr.splitlines()), repr(result.stderr)
    assert "Traceback" not in result.stderr


def test_the_scans_flags_answer_makes_objects_only_of_what_it_reads():
    """imap-scan's FLAGS fetch made a set of every flag of every UID the answer named: 4 MB of
    answers within the client's bound (other UIDs, 500,000 distinct flags) peaked at 46 MB of
    Python objects. Only the asked UIDs' MARK and \\Deleted are kept now."""
    import tracemalloc

    from nbtext.jobs.imapscan import DELETED, MARK, MARKED, flags_of

    flood = b" ".join(b"$F%d" % n for n in range(125_000))
    lines = [b"%d (UID %d FLAGS (%s \\Deleted %s))" % (n, n, flood, MARK.encode()) for n in (1, 7, 8, 9)]
    tracemalloc.start()
    try:
        found = flags_of(Answering(lines), [1, 7])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == {1: {MARKED, DELETED}, 7: {MARKED, DELETED}}
    assert peak < 8 << 20, f"{peak / 2**20:.0f} MiB"


def test_the_scans_identities_answer_is_read_in_time_linear_in_it():
    """Attack 58: imap-scan's fetch of a move begun's date, size and Message-ID (_identities,
    asked of any message the server says carries nbtext's keyword) joined each line of the
    answer after a message's first to what came before, copying it all again each time: an
    answer of short lines within the client's bound (16 MiB: 80,000 of them) cost minutes of
    CPU (40,000 lines of 100 bytes, 40 s). Timed at N and 4N lines: linear gives about 4,
    quadratic 16 (as tests/test_hostile.py: a ratio, the best of up to three, not a clock)."""
    from nbtext.jobs.imapscan import _identities

    def read(lines):
        head = (b'1 (UID 1 INTERNALDATE "29-Nov-2026" RFC822.SIZE 5 BODY[HEADER.FIELDS (MESSAGE-ID)] {3}', b"<a>")
        session = Answering([head] + [b"1 " + b"x" * 100] * lines)
        assert _identities(session, [1]) == {1: (b"29-Nov-2026", 5, b"<a>")}

    ratios = cpu_ratios(read, 5_000, 20_000)
    assert min(ratios) < 8, f"20,000 lines take {ratios} times as long as 5,000"


# --- a last pass: whatever the server answers, one line or the messages, never a traceback -----
LINE = st.one_of(
    st.binary(max_size=40),
    st.sampled_from(
        [b"* ", b"* 1 FETCH (", b"UID ", b"BODY[] ", b"{5}", b"{0}", b")", b"* BYE", b"* OK [", b"NO", b"BAD"]
    ),
).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))
ANSWER = st.lists(st.lists(LINE, min_size=1, max_size=4).map(b"".join), max_size=6)


@pytest.mark.filterwarnings("default::UserWarning")  # (messages "deleted meanwhile": one line)
@HYPOTHESIS
@given(
    where=st.sampled_from(
        [b"EXAMINE", b"SELECT", b"UID FETCH (UID)", b"UID FETCH BODY", b"CAPABILITY", b"CAPABILITY again", b"LIST"]
    ),
    lines=ANSWER,
    ends=st.sampled_from([b" OK done", b" NO no", b" BAD bad", b""]),
    command=st.sampled_from(["predict", "imap-scan"]),
)
@example(where=b"CAPABILITY again", lines=[b"* CAPABILITY {5}", b"IMAP4 x"], ends=b" OK done", command="predict")
def test_whatever_a_server_answers_is_read_or_one_line(model, tmp_path_factory, where, lines, ends, command):
    """Generated answers (bytes, pieces of IMAP's grammar, literals of any size announced) to
    one command, the rest of the conversation as a server's: the run reads the messages or
    stops with one line of printable characters, never a traceback (a literal in the CAPABILITY
    answer after login raised AttributeError)."""
    state = tmp_path_factory.mktemp("s") / "state"

    def answer(server, tag, said, arguments):
        asked = said + (
            b" (UID)" if arguments.endswith(b"(UID RFC822.SIZE)") else b" BODY" if b"BODY" in arguments else b""
        )
        if said == b"CAPABILITY" and any(b" LOGIN " in line for line in server.said):  # (the one after login)
            asked = b"CAPABILITY again"
        if asked != where:
            return False
        server.send(*lines)
        if ends:
            server.send(tag + ends)
        else:
            server.hang_up()
        return True

    with HostileImap({1: SPAM, 2: HAM}) as server:
        server.answer = answer
        result = invoke("predict", "-m", model, server.url()) if command == "predict" else scan(server, model, state)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1), result.stderr
    assert all(line.isprintable() for line in result.stderr.splitlines()), repr(result.stderr)


class Answering:
    """A Session stand-in whose every command answers `lines`."""

    def __init__(self, lines):
        self.lines = lines

    def command(self, what, *arguments, **expected):
        return self.lines


@HYPOTHESIS
@given(
    lines=st.lists(
        st.one_of(
            st.binary(max_size=30),
            st.sampled_from([b"UID ", b"FLAGS (", b")", b"RFC822.SIZE ", b'INTERNALDATE "x" ', b"9" * 5000]),
        ).map(lambda b: b),
        max_size=8,
    ).map(lambda pieces: [b"1 (" + b"".join(pieces)])
)
def test_the_scans_own_fetches_read_any_answer_without_a_traceback(lines):
    """imap-scan's FLAGS and INTERNALDATE/RFC822.SIZE fetches (jobs.imapscan) read a UID or
    size of 5000 digits with int(), a ValueError; what no UID or size can be names none."""
    from nbtext.jobs.imapscan import _identities, flags_of

    assert set(flags_of(Answering(lines), [1, 7])) <= {1, 7}
    assert set(_identities(Answering(lines), [1, 7])) <= {1, 7}
    assert flags_of(Answering([b"1 (UID " + b"9" * 5000 + b" FLAGS ())"]), [1]) == {}


@HYPOTHESIS
@given(
    where=st.sampled_from(["CAPABILITY", "its refusal", "AUTHENTICATE"]),
    said=st.binary(min_size=1, max_size=12).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")),
    command=st.sampled_from(["predict", "imap-scan"]),
)
@example(where="CAPABILITY", said=b"\xc3\xa9", command="predict")
@example(where="its refusal", said=b"\xc2\x9b", command="predict")
@example(where="AUTHENTICATE", said=b"a", command="imap-scan")
def test_capabilities_or_a_challenge_imaplib_cannot_decode_are_one_line(model, tmp_path_factory, where, said, command):
    """What the server says where imaplib decodes it itself: the CAPABILITY answer at
    connection (an untagged line, or a NO whose text imaplib reads as the capabilities) as
    ASCII, the AUTHENTICATE PLAIN challenge (a password not ASCII) as base64. Other bytes
    were a traceback (UnicodeDecodeError, binascii.Error); now the run reads the folder or
    stops with one line, and the password is not sent after a challenge it cannot read."""
    state = tmp_path_factory.mktemp("s") / "state"

    def answer(server, tag, command, arguments):
        if command == b"CAPABILITY" and where != "AUTHENTICATE":
            server.send(*([b"* CAPABILITY IMAP4rev1 " + said, tag + b" OK done"] if where == "CAPABILITY" else []))
            server.send(*([] if where == "CAPABILITY" else [tag + b" NO " + said]))
            return True
        if command == b"AUTHENTICATE" and where == "AUTHENTICATE":
            server.send(b"+ " + said)
            server.said.append(b"answered: " + server.local.rfile.readline())
            server.send(tag + b" OK logged in")
            return True
        return False

    password = {"NBTEXT_IMAP_PASSWORD": "p\u00e4ss-SECRET"}  # (not ASCII: AUTHENTICATE PLAIN)
    with HostileImap({1: SPAM, 2: HAM}) as server:
        server.answer = answer
        if command == "predict":
            result = invoke("predict", "-m", model, server.url(), env=password)
        else:
            result = invoke("imap-scan", "-m", model, "--move-to", "Junk", "--state", state, server.url(), env=password)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1) and "Traceback" not in result.stderr, result.stderr
    assert all(line.isprintable() for line in result.stderr.splitlines()), repr(result.stderr)
    assert result.exit_code == 0 or len(result.stderr.splitlines()) == 1, result.stderr
    if "not base64" in result.stderr:  # (nothing answered the challenge: the password was not sent)
        assert [line for line in server.said if line.startswith(b"answered: ")] in ([], [b"answered: "])


# --- the time a server may take ---------------------------------------------------------------
# The commands whose answers a server stalls in (HostileImap's `stall`: a piece of the command line)
STALLS = {
    "predict": [b"GREETING", b"CAPABILITY", b"LOGIN", b"EXAMINE", b"RFC822.SIZE", b"BODY.PEEK"],
    "imap-scan": [b"GREETING", b"SELECT", b"LIST", b"RFC822.SIZE", b"(UID FLAGS)", b"BODY.PEEK", b"UID STORE"],
}


def with_answers_of(seconds, monkeypatch):
    """Each answer given `seconds` (ANSWER_SECONDS; the bytes it expects no more time)."""
    from nbtext.reading import imapclient

    monkeypatch.setattr(imapclient, "ANSWER_SECONDS", seconds)
    monkeypatch.setattr(imapclient, "SLOWEST", 1 << 40)


@pytest.mark.parametrize("command, where", [(command, where) for command, wheres in STALLS.items() for where in wheres])
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(first=st.integers(0, 5), how=st.sampled_from(["trickles", "falls silent"]))
def test_a_server_that_stalls_in_any_answer_is_the_runs_error(
    model, tmp_path_factory, monkeypatch, command, where, first, how
):
    """Issue 49: the socket's timeout is per read, so a server sending a byte every 59 s never
    timed out. Now each answer (here of 0.5 s) is read whole before its deadline, whichever
    command it answers and wherever in it the server stalls (trickling a byte every 0.1 s for
    3 s, or saying nothing for 2 s; each answer is 15 bytes or more): one line, the run's error, the scan's state as it was
    but for the batch of messages stalled on, which the next run asks for one at a time.
    (Before, each run read the whole answer and went on.)"""
    with_answers_of(0.5, monkeypatch)
    state = tmp_path_factory.mktemp("s") / "state"
    state.write_text(json.dumps({"version": 1, "folders": {"imap://a@h/X": {"uid_validity": 1, "last_uid": 3}}}))
    before = state.read_bytes()
    with HostileImap({1: SPAM, 2: HAM}) as server:
        server.stall = (where, first, 0.1, 30) if how == "trickles" else (where, first, 2, 1)
        result = invoke("predict", "-m", model, server.url()) if command == "predict" else scan(server, model, state)
    one_line_error(result, "its answer to")  # (did not finish it within 0.5 s, or said nothing for 0.5 s)
    if command == "imap-scan" and where in (b"BODY.PEEK", b"(UID FLAGS)", b"UID STORE"):  # (a batch's command:
        # nothing done; the batch stalled on kept for the next run)
        scanned = json.loads(state.read_text())["folders"].pop(server.url())
        moving = {"moving": [1]} if where == b"UID STORE" else {}  # (the spam's move begun: recorded before it)
        assert scanned == {"uid_validity": scanned["uid_validity"], "last_uid": 0, "stalled": 2} | moving
        assert json.loads(state.read_text())["folders"] == json.loads(before)["folders"] | {server.url(): scanned}
    else:
        assert state.read_bytes() == before


# (what stretched an answer's deadline: the server's own EXISTS and UIDNEXT for a listing, the
# user's --max-bytes for a message's FETCH)
CLAIMS = {"a listing of EXISTS 2^32 - 1": b"RFC822.SIZE", "a message under --max-bytes 2e9": b"BODY.PEEK"}


@given(sizes=st.lists(st.integers(1, 200), max_size=50))
def test_the_pace_of_an_answer_gives_each_line_the_time_its_deadline_does(sizes):
    """The pace an answer must keep past its first seconds (imapclient.Bounded._paced) counts
    each line as LISTED_LINE bytes at least: a listing's lines of any length, as they come,
    keep the 1 ms each that its deadline gives them (a listing of short lines, 44 bytes, at
    1,250 a second came slower than 64 KiB/s and would have stalled)."""
    from nbtext.reading import imapclient

    client = imapclient.Client.__new__(imapclient.Client)  # (no connection: the arithmetic alone)
    client.started, client.received, client.lines = 0.0, sum(sizes), len(sizes)
    assert client._paced() >= imapclient.ANSWER_SECONDS + len(sizes) * imapclient.LISTED_LINE / imapclient.SLOWEST


@pytest.mark.parametrize("command", ["predict", "imap-scan"])
@pytest.mark.parametrize("claim", CLAIMS)
def test_an_answer_trickled_past_its_first_seconds_slower_than_the_slowest_rate_is_the_runs_error(
    model, tmp_path, monkeypatch, command, claim
):
    """Attack 58: an answer's deadline was its first seconds plus the time of all the bytes the
    command MAY bring at SLOWEST, which the server sets itself (a listing under EXISTS and
    UIDNEXT 4294967295: 48 days) or --max-bytes does (2e9: 8.5 hours): within it a server
    trickling a byte just under the silence bound (here every 0.1 s, the bound 0.5 s) held the
    run for as long as it liked. Now past its first ANSWER_SECONDS an answer must have brought
    SLOWEST bytes a second of what it did bring: this one (30 bytes trickled over 3 s, then the
    rest) is the run's error in one line, nothing scanned. (Before: read whole, exit 0.)"""
    from nbtext.reading import imapclient

    monkeypatch.setattr(imapclient, "ANSWER_SECONDS", 0.5)  # (SLOWEST as it is: 64 KiB/s)
    options = ["--max-bytes", "2000000000"] if "max-bytes" in claim else []
    with HostileImap({1: SPAM, 2: HAM}) as server:
        if "EXISTS" in claim:
            server.exists, server.uid_next = 4294967295, 4294967295
        server.stall = (CLAIMS[claim], 5, 0.1, 30)
        result = (
            invoke("predict", "-m", model, *options, server.url())
            if command == "predict"
            else scan(server, model, tmp_path / "state", *options)
        )
    one_line_error(result, "its answer to UID FETCH")
    assert nothing_scanned(tmp_path / "state")


def nothing_scanned(state):
    """Whether imap-scan's `state` says nothing was scanned: no file, or one whose folders hold
    only the batch the server stalled on (which the next run asks for a message at a time)."""
    if not state.exists():
        return True
    folders = json.loads(state.read_text())["folders"].values()
    return all(set(v) == {"uid_validity", "last_uid", "stalled"} and v["last_uid"] == 0 for v in folders)


@pytest.mark.parametrize("command", ["predict", "imap-scan"])
def test_a_literal_short_of_its_size_is_the_runs_error_not_a_retry_of_each_message(
    model, tmp_path, monkeypatch, command
):
    """The attacker's case: each message's literal 10 bytes short of its announced size, then
    nothing. Each FETCH waited for the connection's timeout, was taken for a connection lost,
    and every message was asked for again alone, twice (783 s for 6 messages with the timeout
    of 60 s). Now the first answer's deadline is the run's error: one FETCH of messages, one line.
    (The connection's timeout is 0.5 s too, for the run before to end soon.)"""
    from nbtext.reading import imap

    with_answers_of(0.5, monkeypatch)
    monkeypatch.setattr(imap, "TIMEOUT", 0.5)

    def short(server, tag, said, arguments):
        if said != b"UID FETCH" or b"BODY" not in arguments:
            return False
        server.out.write(b"* 1 FETCH (UID 1 BODY[] {%d}\r\n" % len(SPAM) + SPAM[:-10])
        server.out.flush()
        import time

        time.sleep(3)
        return True

    with HostileImap({n: SPAM for n in range(1, 7)}) as server:
        server.answer = short
        result = (
            invoke("predict", "-m", model, server.url())
            if command == "predict"
            else scan(server, model, tmp_path / "state")
        )
    one_line_error(result, "its answer to UID FETCH")
    assert len([line for line in server.said if b"BODY" in line]) == 1
    if command == "imap-scan":  # (nothing scanned; the batch stalled on, which the next run asks for one at a time)
        folders = json.loads((tmp_path / "state").read_text())["folders"]
        assert [(v["last_uid"], v["stalled"]) for v in folders.values()] == [(0, 6)]


@pytest.mark.parametrize("command", ["predict", "imap-scan"])
def test_a_tls_handshake_not_made_in_time_is_one_line_in_words(model, tmp_path, monkeypatch, command):
    """A server that takes the connection and says nothing: over imaps the client's TLS handshake
    waits for it. The run's error was ssl's own text ("_ssl.c:989: The handshake operation timed
    out"); now one line that says what was not done."""
    from nbtext.reading import imap

    with_answers_of(0.5, monkeypatch)
    monkeypatch.setattr(imap, "TIMEOUT", 0.5)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        held = []
        taking = threading.Thread(target=lambda: held.append(listener.accept()), daemon=True)
        taking.start()
        url = f"imaps://alice@127.0.0.1:{listener.getsockname()[1]}/INBOX"
        if command == "predict":
            result = invoke("predict", "-m", model, url)
        else:
            result = invoke("imap-scan", "-m", model, "--move-to", "Junk", "--state", tmp_path / "state", url)
        for connection, _ in held:
            connection.close()
    one_line_error(result, "its TLS handshake was not made in time")
    assert "_ssl.c" not in result.output
    assert not (tmp_path / "state").exists()


def test_a_scan_past_its_time_limit_keeps_what_it_did_and_the_next_run_does_the_rest(model, tmp_path, monkeypatch):
    """imap-scan --time-limit: a server that answers each FETCH of messages in 0.3 s (within
    each answer's deadline), a batch a message: the run stops in one line once past its limit,
    the state remembering the batches done, and the next run scans the rest, no message twice
    (the one whose FETCH the limit cut, taken for one stalled on, after the others)."""
    from nbtext.reading import imap

    monkeypatch.setattr(imap, "BATCH", 1)
    state = tmp_path / "state"

    def slow(server, tag, said, arguments):
        if said == b"UID FETCH" and b"BODY" in arguments:
            import time

            time.sleep(0.3)
        return False

    with HostileImap({n: SPAM if n % 2 else HAM for n in range(1, 11)}) as server:
        server.answer = slow
        first = scan(server, model, state, "--time-limit", "1")
        one_line_error(first, "--time-limit of 1 s")
        done = json.loads(state.read_text())["folders"][server.url()]["last_uid"]
        server.answer = None
        second = scan(server, model, state)
    assert second.exit_code == 0, second.stderr
    names = [line.split("\t")[0] for line in first.stdout.splitlines() + second.stdout.splitlines()]
    assert 0 < done < 10 and sorted(int(n.rsplit("=", 1)[1]) for n in names) == list(range(1, 11))


# --- a message the server would not send is tried again by imap-scan ----------------------------
@pytest.mark.filterwarnings("default::UserWarning")  # the command line says it as one line
def test_a_message_the_server_would_not_send_is_scanned_by_a_later_run_or_given_up_in_a_line(model, tmp_path):
    """Through the command line: UID 2 refused (NO) on runs 1 and 2 is skipped by name and
    kept in the state; sent on run 3, it is classified there. UID 3, refused on every run, is
    given up after 3 runs, said in a warning line, and not asked for again."""
    refused = {2, 3}

    def refusing(server, tag, said, arguments):
        asked = arguments.split(b" ", 1)[0]
        if said == b"UID FETCH" and b"BODY" in arguments and any(str(u).encode() in asked.split(b",") for u in refused):
            server.send(tag + b" NO cannot read it")
            return True
        return False

    state = tmp_path / "state"
    with HostileImap({1: SPAM, 2: SPAM, 3: HAM}) as server:
        server.answer = refusing
        runs = []
        for run in range(5):
            refused = {2, 3} if run < 2 else {3}
            server.said.clear()
            runs.append((scan(server, model, state), [line for line in server.said if b"BODY" in line]))
    scanned = [[int(line.split("\t")[0].rsplit("=", 1)[1]) for line in r.stdout.splitlines()] for r, _ in runs]
    assert scanned == [[1], [], [2], [], []]
    assert [r.exit_code for r, _ in runs] == [1, 1, 1, 0, 0]
    assert "UID=2" in runs[0][0].stderr and "UID=3" in runs[1][0].stderr
    assert (
        "no longer tried, left in the folder unscanned (UID 3)" in runs[2][0].stderr
        and "no longer tried" not in runs[1][0].stderr
    )
    assert runs[4][1] == []  # (nothing asked for: UID 3 given up)
    assert "skipped" not in json.loads(state.read_text())["folders"][server.url()]


@pytest.mark.filterwarnings("default::UserWarning")  # the command line says it as one line
def test_a_message_the_server_stalls_on_every_run_does_not_hold_the_folder_back(model, tmp_path, monkeypatch):
    """Attack 58: the server falls silent whenever it is asked for UID 2 (a message it cannot
    read fast, or at all). A stall is the run's error, the state keeping the batches done:
    every run asked for the same batch again, stalled, and the messages after UID 2 were never
    scanned, while one the server refuses is skipped, tried by 3 runs and given up in a line.
    Now the run after a stalled batch asks for its messages one at a time, and one that stalls
    alone is skipped as a refused one is: within a few runs UIDs 1, 3, 4 scanned, 2 given up in
    a line, each run still ended by its stall."""
    from nbtext.reading import imap

    with_answers_of(0.3, monkeypatch)
    monkeypatch.setattr(imap, "TIMEOUT", 0.3)

    state = tmp_path / "state"
    with HostileImap({1: SPAM, 2: HAM, 3: SPAM, 4: HAM}) as server:
        server.answer = stalling_on({2})
        runs = [scan(server, model, state) for _ in range(6)]
    assert scanned_uids(runs) == {1, 3, 4}, [r.stderr for r in runs]
    assert any("no longer tried" in r.stderr and "(UID 2)" in r.stderr for r in runs)


@pytest.mark.filterwarnings("default::UserWarning")  # the command line says it as one line
def test_messages_stalled_on_are_tried_after_the_new_mail(model, tmp_path, monkeypatch):
    """Two messages the server stalls on whenever asked (UIDs 2 and 3): each run still ends in
    its stall's line, but tries them again only after the new mail, so mail that arrives while
    they are being given up is scanned by the next run (before, they were asked for first: the
    first one's stall ended each run, and new mail waited three runs for each of them)."""
    from nbtext.reading import imap

    with_answers_of(0.3, monkeypatch)
    monkeypatch.setattr(imap, "TIMEOUT", 0.3)

    state = tmp_path / "state"
    with HostileImap({1: SPAM, 2: HAM, 3: SPAM, 4: HAM}) as server:
        server.answer = stalling_on({2, 3})
        runs = [scan(server, model, state) for _ in range(3)]  # (the batch stalled on; 1 scanned, 2 skipped; 3 skipped)
        server.messages.update({5: SPAM, 6: HAM})
        arrived = scan(server, model, state)
    assert scanned_uids(runs) == {1}, [r.stderr for r in runs]
    assert scanned_uids([arrived]) == {4, 5, 6}
    one_line_error(arrived, "its answer to UID FETCH")  # (then 2, tried again, stalls)


def stalling_on(uids):
    """A HostileImap `answer` that falls silent (1 s) whenever a FETCH of messages names one of `uids`."""

    def stalling(server, tag, said, arguments):
        asked = set(arguments.split(b" ", 1)[0].split(b","))
        if said == b"UID FETCH" and b"BODY" in arguments and asked & {b"%d" % uid for uid in uids}:
            import time

            time.sleep(1)
            return True
        return False

    return stalling


def scanned_uids(runs):
    """The UIDs imap-scan's `runs` printed a verdict of."""
    return {int(line.split("\t")[0].rsplit("=", 1)[1]) for r in runs for line in r.stdout.splitlines()}


@pytest.mark.filterwarnings("default::UserWarning")  # the command line says it as one line
@pytest.mark.parametrize("command", ["predict", "imap-scan"])
def test_a_listing_the_server_refuses_in_part_lists_the_rest_by_search(command, model, tmp_path):
    """Dovecot answers a FETCH of many messages, one of whose files it cannot read, with the
    others' lines and then NO [SERVERBUG]: the listing was the run's error every run (a damaged
    message hid the whole folder from predict and imap-scan for good). Now the UIDs are asked
    for by SEARCH (the sizes said kept), said in one warning line, and every message read: the
    one the listing left out asked for alone, sent here."""

    def answer(server, tag, command, arguments):
        if command == b"UID FETCH" and arguments.endswith(b"(UID RFC822.SIZE)"):
            server.send(b"* 1 FETCH (UID 1 RFC822.SIZE 30)", b"* 3 FETCH (UID 3 RFC822.SIZE 30)")
            server.send(tag + b" NO [SERVERBUG] Internal error occurred")
            return True
        if command == b"UID SEARCH":
            server.send(b"* SEARCH 1 2 3", tag + b" OK done")
            return True
        return False

    with HostileImap({1: HAM, 2: SPAM, 3: HAM}) as server:
        server.answer = answer
        if command == "predict":
            result = invoke("predict", "-m", model, server.url())
        else:
            result = scan(server, model, tmp_path / "state")
    assert result.exit_code == 0, result.stderr
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [
        f"{server.url()}/;UID={uid}" for uid in (1, 2, 3)
    ]
    assert "refused to list some messages" in result.stderr and "[SERVERBUG]" in result.stderr
