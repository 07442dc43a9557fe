"""imap-scan's moves against a fake IMAP server that fails (nbtext.jobs.imapscan): whatever is
lost (a command's answer, the connection, the state file, the folder's UIDVALIDITY) or refused,
and wherever the process is killed, on a server with or without MOVE and UIDPLUS, a retry never
copies a message twice, a move the server refuses leaves the message where it was, and no
message is lost: each is in its folder, or in the folder spam goes to exactly once (where it
was scanned at most marked \\Deleted). The real Dovecot's side is in tests/test_imap.py."""

import json
import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import nbtext
from nbtext.errors import NbtextError
from nbtext.jobs import imapscan
from nbtext.reading.imap import Lost, Refused, command_kind

from conftest import one_line_error
from dovecot_server import NBTEXT, LoopbackProxy

URL = "imap://alice@example.org/INBOX"


class Killed(BaseException):
    """The process killed: nothing after this step runs (not an error nbtext could catch)."""


class Server:
    """An IMAP server's folders in memory ({name: {"validity", "next", "messages": {UID: [bytes,
    flags, INTERNALDATE]}}}), with `capabilities`, which fails as `faults` says: {step: kind},
    a step being each command any connection sends and each write of the scan's state, in
    order, counted in `steps`; kind "refused" (NO: nothing done), "lost" (done, then the
    connection dropped before its answer), "killed" (done, then the process killed), "half"
    (done, then NO; a MOVE copies and leaves the messages). The commands of `refuse` it always
    refuses, and a fetch of the messages of `unsent` (bytes: a message it will not send).
    `said`: the commands, in order."""

    def __init__(self, capabilities, folders):
        self.capabilities, self.folders = set(capabilities), folders
        self.faults, self.steps, self.said, self.refuse, self.unsent = {}, 0, [], set(), set()
        self.keywords = True  # (False: a server that keeps no keyword, only the system flags)

    def step(self, name):
        """The fault of this step, counted (None: none)."""
        self.said.append(name)
        self.steps += 1
        return self.faults.pop(self.steps, None)

    def append(self, name, message, flags=(), date=None):
        folder = self.folders.setdefault(name, {"validity": 1, "next": 1, "messages": {}})
        date = date or f"29-Nov-2026 05:{folder['next'] // 60:02d}:{folder['next'] % 60:02d} +0000"
        folder["messages"][folder["next"]] = [message, set(flags), date]
        folder["next"] += 1

    connection = None  # the Connection class its sessions are (None: Connection)

    def renumber(self, name):
        """The folder's UIDs given again under a new UIDVALIDITY (its messages and flags kept)."""
        folder = self.folders[name]
        held = [folder["messages"][uid] for uid in sorted(folder["messages"])]
        folder["validity"] += 1
        folder["messages"] = {n: m for n, m in enumerate(held, 1)}
        folder["next"] = len(held) + 1

    def session(self):
        """The Session class the scan job is given: connections to this server."""
        server = self

        class Session(self.connection or Connection):
            def __init__(self, folder, readonly=True, access=None):
                super().__init__(server, folder, readonly)

        return Session


class Connection:
    """A Session of nbtext.reading.imap over a Server: the folder open (read-only or not)."""

    def __init__(self, server, folder, readonly):
        self.server, self.folder, self.readonly, self.lost = server, folder, readonly, False
        self.kinds_done = set()
        self.lost_in_a_row = 0  # (as nbtext's Session counts them)

    def __enter__(self):
        self.capabilities = self.server.capabilities
        self.open = self.server.folders[self.folder.name]
        self.uid_validity, self.exists = self.open["validity"], len(self.open["messages"])
        self.uid_next = self.open["next"]
        # (its SELECT's PERMANENTFLAGS, as Dovecot's: an EXAMINE's keep no flag)
        keeps = {"\\SEEN", "\\ANSWERED", "\\FLAGGED", "\\DELETED", "\\DRAFT"}
        self.permanent_flags = set() if self.readonly else keeps | ({"\\*"} if self.keeps_keywords() else set())
        return self

    def keeps_keywords(self):
        """Whether the folder open keeps keywords (a Connection of a folder that keeps none says False)."""
        return self.server.keywords

    def __exit__(self, *exception):
        pass

    def reconnect(self):
        validity = self.uid_validity
        self.lost = False
        self.__enter__()
        if self.uid_validity != validity:
            raise NbtextError("the folder was replaced")

    @property
    def client(self):
        return self

    def list(self, *arguments):
        raise AssertionError("asked through `call`")

    def call(self, method, *arguments):  # (the one call the scan makes of the client: LIST of the folder)
        name = arguments[1].strip('"')
        return "OK", [f'() "/" {name}'.encode()] if name in self.server.folders else [None]

    def command(self, what, *arguments, answers=0, literal=0, budget=None, each=None, lines=0):
        try:
            answer = self.answered(what, *arguments)
        except Refused as refusal:  # (named by the command refused, as the real Session's)
            refusal.command = refusal.command or what
            refusal.kind, refusal.folder = command_kind(what, arguments), self.folder.url
            raise
        self.kinds_done.add(command_kind(what, arguments))  # (as the real Session keeps them)
        if each is not None:  # (a listing reads its answers as they arrive: the real client keeps none)
            answer = [item for item in answer if not each("SEARCH" if what == "SEARCH" else "FETCH", item)]
        return answer

    def answered(self, what, *arguments):
        if self.lost:
            raise Lost("the connection failed")
        fault = self.server.step(what)
        self.half = fault == "half"
        if fault == "refused" or what in self.server.refuse or (what == "MOVE" and "MOVE" not in self.capabilities):
            raise Refused(f"the server refused UID {what} (no)", "no")
        if what == "FETCH" and "BODY.PEEK[]" in arguments[-1]:  # (a message's bytes)
            if any(self.open["messages"][uid][0] in self.server.unsent for uid in self.uids(arguments[0])):
                raise Refused(f"the server refused UID {what} (cannot read it)", "cannot read it")
        if what == "EXPUNGE" and "UIDPLUS" not in self.capabilities:
            raise Refused("the server refused UID EXPUNGE (unknown command)", "unknown command")
        if self.readonly and what in ("STORE", "COPY", "MOVE", "EXPUNGE"):
            raise Refused(f"the server refused UID {what} (read-only)", "read-only")
        answer = getattr(self, what.lower())(*arguments)
        if fault == "half":  # (a MOVE that copied, then failed)
            raise Refused(f"the server refused UID {what} (half done)", "half done")
        if fault == "lost":
            self.lost = True
            raise Lost("the connection failed")
        if fault == "killed":
            raise Killed
        return answer

    def uids(self, uid_set):
        held = self.open["messages"]
        if uid_set.endswith(":*"):
            first = int(uid_set[:-2])
            return [u for u in sorted(held) if u >= first] or sorted(held)[-1:]
        return [int(u) for u in uid_set.split(",") if int(u) in held]

    def fetch(self, uid_set, items):
        answer = []
        for n, uid in enumerate(self.uids(uid_set), 1):
            message, flags, date = self.open["messages"][uid]
            if items == "(UID RFC822.SIZE)":
                answer.append(f"{n} (UID {uid} RFC822.SIZE {len(message)})".encode())
            elif items == "(UID)":
                answer.append(f"{n} (UID {uid})".encode())
            elif items == "(UID FLAGS)":
                answer.append(f"{n} (UID {uid} FLAGS ({' '.join(sorted(flags))}))".encode())
            elif "HEADER.FIELDS" in items:
                lines = b"".join(re.findall(rb"(?im)^message-id:.*\r?\n", message.split(b"\n\n")[0] + b"\n")) + b"\r\n"
                head = f'{n} (UID {uid} INTERNALDATE "{date}" RFC822.SIZE {len(message)} BODY[HEADER.FIELDS (MESSAGE-ID)] {{{len(lines)}}}'
                answer += [(head.encode(), lines), b")"]
            else:
                answer += [(f"{n} (UID {uid} BODY[] {{{len(message)}}}".encode(), message), b")"]
        return answer

    def store(self, uid_set, how, flags):
        assert how in ("+FLAGS.SILENT", "-FLAGS.SILENT"), how
        for uid in self.uids(uid_set):
            kept = [f for f in flags.strip("()").split() if self.server.keywords or f.startswith("\\")]
            held = self.open["messages"][uid][1]
            held.update(kept) if how[0] == "+" else held.difference_update(kept)
        return [None]

    def copy(self, uid_set, target):
        copies = []
        for uid in self.uids(uid_set):
            message, flags, date = self.open["messages"][uid]
            self.server.append(target.strip('"'), message, flags - {"\\Recent"}, date)
            copies.append((uid, self.server.folders[target.strip('"')]["next"] - 1))
        if copies and "UIDPLUS" in self.capabilities:  # (RFC 4315's COPYUID, in the OK of COPY and MOVE)
            validity = self.server.folders[target.strip('"')]["validity"]
            self.copyuid = b"%d %s %s" % (validity, *(",".join(str(u[n]) for u in copies).encode() for n in (0, 1)))
        return [None]

    def response(self, code):
        """imaplib's: the response code's data said since it was last asked ([None]: none), forgotten."""
        assert code == "COPYUID", code
        return code, [self.__dict__.pop("copyuid", None)]

    def move(self, uid_set, target):
        moving = self.uids(uid_set)
        self.copy(uid_set, target)
        if not self.half:
            for uid in moving:
                del self.open["messages"][uid]
        return [None]

    def expunge(self, uid_set):
        for uid in self.uids(uid_set):
            if "\\Deleted" in self.open["messages"][uid][1]:
                del self.open["messages"][uid]
        return [None]

    def search(self, *criteria):
        criteria = list(criteria)
        if criteria[0] == "UID":  # (the listing's fallback where its FETCH was refused)
            return [" ".join(map(str, self.uids(criteria[1]))).encode()]
        assert criteria[:2] == ["KEYWORD", imapscan.MARK], criteria
        larger = int(criteria[criteria.index("LARGER") + 1]) if "LARGER" in criteria else -1
        smaller = int(criteria[criteria.index("SMALLER") + 1])
        found = [
            uid
            for uid, (message, flags, _) in sorted(self.open["messages"].items())
            if imapscan.MARK in flags
            and larger < len(message) < smaller
            and not ("UNDELETED" in criteria and "\\Deleted" in flags)
        ]
        return [" ".join(map(str, found)).encode()]


def deleted_before_act(server, message, monkeypatch):
    """imap-scan's act (the STORE, COPY or MOVE of the spam judged) made just after another
    client deleted `message` from INBOX."""
    act = imapscan.act

    def act_after_a_deletion(session, uids, *arguments, **options):
        gone = next(uid for uid, (m, _, _) in server.folders["INBOX"]["messages"].items() if m == message)
        del server.folders["INBOX"]["messages"][gone]
        return act(session, uids, *arguments, **options)

    monkeypatch.setattr(imapscan, "act", act_after_a_deletion)


def small_model():
    """The model these tests (and test_attack_stall's, test_attack_imap59's) scan with: SPAM's words spam, HAM's ham."""
    return nbtext.train(
        ["cheap pills now", "win cash prize", "lunch at noon", "meeting notes"],
        ["spam", "spam", "ham", "ham"],
        min_count=1,
    )


@pytest.fixture(scope="module")
def model():
    return small_model()


def spam(n):
    return f"Message-ID: <{n}@example.org>\nSubject: win\n\ncheap pills cash prize {n}\n".encode()


def ham(n):
    return f"Subject: lunch\n\nlunch meeting at noon {n}\n".encode()  # (no Message-ID: the date and size alone)


def where(server, message):
    """(how many copies in INBOX, of them \\Deleted; how many in Junk)."""
    inbox = [flags for m, flags, _ in server.folders["INBOX"]["messages"].values() if m == message]
    junk = [m for m, _, _ in server.folders["Junk"]["messages"].values() if m == message]
    return len(inbox), sum("\\Deleted" in f for f in inbox), len(junk)


def scanned(server, model, monkeypatch, state):
    """One run of the scan (moving spam to Junk) against `server`: None, or how it ended."""
    monkeypatch.setattr(imapscan, "Session", server.session())
    written = imapscan.write_state

    def write_state(path, folders):
        fault = server.step("state")
        if fault in ("refused", "lost"):
            raise NbtextError("the disk is full")
        if fault == "killed":  # (killed before the rename: the state file as it was)
            raise Killed
        written(path, folders)

    monkeypatch.setattr(imapscan, "write_state", write_state)
    try:
        with warnings.catch_warnings():  # (what a run says in warning lines: a message gone, one given up)
            warnings.simplefilter("ignore")
            imapscan.scan(URL, model.classes, lambda: model, "Junk", state_path=str(state))
    except (NbtextError, Killed) as e:
        return type(e).__name__
    return None


def holds(server, messages, done=False):
    """Each spam in Junk at most once (`done`: exactly once, and in INBOX at most marked
    \\Deleted), never lost; each ham in INBOX once, unmarked, never copied."""
    for message in messages:
        inbox, deleted, junk = where(server, message)
        if message in SPAM:
            assert junk <= 1 and inbox <= 1, (message, inbox, junk)
            assert junk == 1 or (inbox == 1 and not deleted), (message, inbox, deleted, junk)  # never lost
            if done:
                assert junk == 1 and inbox == deleted, (message, inbox, deleted, junk)
        else:
            assert (inbox, deleted, junk) == (1, 0, 0), message


SPAM, HAM = [spam(n) for n in range(4)], [ham(n) for n in range(3)]
SERVERS = {
    "MOVE, UIDPLUS": {"MOVE", "UIDPLUS"},
    "UIDPLUS, no MOVE": {"UIDPLUS"},
    "neither": set(),
    "MOVE alone": {"MOVE"},
}
# Between two runs: nothing, the state file lost, or the folder renumbered under a new UIDVALIDITY
BETWEEN = ["nothing", "state lost", "new UIDVALIDITY", "new mail"]


def a_server(capabilities):
    server = Server(capabilities, {})
    server.folders["Junk"] = {"validity": 9, "next": 1, "messages": {}}
    for message in [SPAM[0], HAM[0], SPAM[1], SPAM[2], HAM[1]]:
        server.append("INBOX", message)
    return server


def retried(server, model, monkeypatch, state, runs):
    """`runs`: (the step that fails, how, what happens before the next run) of each run; then
    runs with no fault until one ends well. Checked after every run."""
    arrived = [SPAM[0], HAM[0], SPAM[1], SPAM[2], HAM[1]]
    for step, kind, between in runs:
        server.faults, server.steps = {step: kind}, 0
        scanned(server, model, monkeypatch, state)
        holds(server, arrived)
        if between == "state lost" and state.exists():
            state.unlink()
        elif between == "new UIDVALIDITY":
            server.renumber("INBOX")
        elif between == "new mail" and len(arrived) < 7:
            arrived.append([SPAM[3], HAM[2]][len(arrived) - 5])
            server.append("INBOX", arrived[-1])
    for _ in range(3):
        server.faults = {}
        if scanned(server, model, monkeypatch, state) is None:
            break
    holds(server, arrived, done=True)
    return arrived


@pytest.mark.parametrize("capabilities", SERVERS.values(), ids=SERVERS.keys())
@pytest.mark.parametrize("kind", ["lost", "refused", "killed", "half"])
def test_every_step_of_a_move_failing_then_a_retry_copies_nothing_twice_and_loses_nothing(
    capabilities, kind, model, monkeypatch, tmp_path
):
    """Issue 49: with COPY's OK lost, STORE \\Deleted or UID EXPUNGE refused or lost, or the
    job killed between COPY and the state's write, the next run copied the same spam again.
    Now each step of a run (every command, the state's write) failing in each way, then the
    run again (once with the state file lost, once under a new UIDVALIDITY): each spam in Junk
    once, each ham in INBOX untouched, nothing lost."""
    server = a_server(capabilities)
    server.faults = {}
    scanned(server, model, monkeypatch, tmp_path / "probe")  # how many steps a run without faults has
    steps = server.steps
    for between in ["nothing", "state lost", "new UIDVALIDITY"]:
        for step in range(1, steps + 1):
            server, state = a_server(capabilities), tmp_path / f"{between}-{step}.state"
            retried(server, model, monkeypatch, state, [(step, kind, between)])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    capabilities=st.sampled_from(list(SERVERS.values())),
    runs=st.lists(
        st.tuples(st.integers(1, 16), st.sampled_from(["lost", "refused", "killed", "half"]), st.sampled_from(BETWEEN)),
        max_size=6,
    ),
)
def test_any_sequence_of_failing_runs_copies_nothing_twice_and_loses_nothing(
    capabilities, runs, model, monkeypatch, tmp_path_factory
):
    """Generated: runs that each fail at some step in some way, with the state file lost, the
    folder renumbered or new mail between them, then runs without faults: after every run no
    spam is in Junk twice nor lost, and at the end each spam is in Junk once."""
    state = tmp_path_factory.mktemp("state") / "state"
    retried(a_server(capabilities), model, monkeypatch, state, runs)


def test_a_move_the_server_refuses_loses_nothing_and_is_tried_again(model, monkeypatch, tmp_path):
    """The server refuses to move spam: the scan says so in one error, leaves the messages
    where they are (only marked with nbtext's keyword, which a retry reads as a move begun: the
    state records them as such before the keyword is given), and remembers nothing past them
    but that the batch was refused (as one stalled on: the next run asks for its messages one
    at a time); the next run, refused each alone, skips each by name and goes on (a refusal
    every message gets counts against none: tried again); then a run moves them, once."""
    server = a_server({"MOVE", "UIDPLUS"})
    server.refuse = {"MOVE"}
    state = tmp_path / "state"
    monkeypatch.setattr(imapscan, "Session", server.session())
    server.said = []
    with pytest.raises(NbtextError, match="refused UID MOVE"):
        imapscan.scan(URL, model.classes, lambda: model, "Junk", state_path=str(state))
    assert server.said[-1] == "MOVE" and "EXPUNGE" not in server.said and "COPY" not in server.said
    assert all(where(server, m) == (1, 0, 0) for m in SPAM[:3] + HAM[:2])
    assert imapscan.read_state(str(state)) == {
        URL: {"uid_validity": 1, "last_uid": 0, "moving": [1, 3, 4], "stalled": 5}
    }
    skipped = []
    imapscan.scan(
        URL, model.classes, lambda: model, "Junk", state_path=str(state), on_error=lambda d, m: skipped.append(d.name)
    )
    assert [name.rsplit("=", 1)[1] for name in skipped] == ["1", "3", "4"]
    assert "COPY" not in server.said and all(where(server, m) == (1, 0, 0) for m in SPAM[:3] + HAM[:2])
    assert imapscan.read_state(str(state)) == {
        URL: {"uid_validity": 1, "last_uid": 5, "moving": [1, 3, 4], "skipped": [[1, 1], [3, 1], [4, 1]]}
    }
    server.refuse = set()
    assert imapscan.scan(URL, model.classes, lambda: model, "Junk", state_path=str(state))["acted"] == 3
    holds(server, SPAM[:3] + HAM[:2], done=True)
    assert sorted(m for m, flags, _ in server.folders["Junk"]["messages"].values() if imapscan.MARK in flags) == sorted(
        SPAM[:3]
    )


def scanned_saying(model, tmp_path, *where):
    """(imap-scan's counts, what it said of each message) of a scan of URL's INBOX by `model`,
    `where` its --move-to and --keyword."""
    said = []
    counts = imapscan.scan(
        URL,
        model.classes,
        lambda: model,
        *where,
        state_path=str(tmp_path / "state"),
        on_message=lambda name, label, probability, action: said.append(action),
    )
    return counts, said


@pytest.mark.parametrize("capabilities", SERVERS.values(), ids=SERVERS.keys())
def test_a_spam_deleted_between_the_scan_and_the_move_is_not_said_moved(capabilities, model, monkeypatch, tmp_path):
    """Another client deletes (expunges) a spam after the scan judged it and before the move:
    nothing of it is moved, the scan's line says so, and it is not counted among those acted on."""
    server = a_server(capabilities)
    monkeypatch.setattr(imapscan, "Session", server.session())
    asked, flags_of = [], imapscan.flags_of

    def flags_after_a_deletion(session, uids, *keywords):
        asked.append(list(uids))
        if len(asked) == 2:  # (the move's own look, after the scan's)
            gone = next(uid for uid, (m, _, _) in server.folders["INBOX"]["messages"].items() if m == SPAM[1])
            del server.folders["INBOX"]["messages"][gone]
        return flags_of(session, uids, *keywords)

    monkeypatch.setattr(imapscan, "flags_of", flags_after_a_deletion)
    counts, said = scanned_saying(model, tmp_path, "Junk")
    assert counts["acted"] == 2 and said.count("moved to Junk") == 2 and said.count("gone before the move") == 1
    assert [where(server, m)[2] for m in (SPAM[0], SPAM[1], SPAM[2])] == [1, 0, 1]


class SaysItsOwnCopyuid(Connection):
    """A server that answers COPY and MOVE OK, acts on those messages alone that it does not
    `ignore` (bytes), and says a COPYUID of its own: `copyuid` None (none), bytes (said as
    they are), or {UID asked: "named" (the UID), "other" (the UID + 100), "left out"}."""

    ignore, said = set(), None

    def acted(self, uid_set):
        return [uid for uid in self.uids(uid_set) if self.open["messages"][uid][0] not in self.ignore]

    def copy(self, uid_set, target):
        acted = self.acted(uid_set)
        if acted:
            super().copy(",".join(map(str, acted)), target)
        self.__dict__.pop("copyuid", None)
        if isinstance(self.said, bytes):
            self.copyuid = self.said
        elif self.said is not None:
            sources = [uid + 100 * (how == "other") for uid, how in sorted(self.said.items()) if how != "left out"]
            if sources:
                self.copyuid = b"9 %s 1:%d" % (",".join(map(str, sources)).encode(), len(sources))
        return [None]

    def move(self, uid_set, target):
        acted = self.acted(uid_set)
        self.copy(uid_set, target)
        for uid in acted:
            del self.open["messages"][uid]
        return [None]


@pytest.mark.filterwarnings("ignore::UserWarning")  # (a message given up: its line checked below)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    capabilities=st.sampled_from(list(SERVERS.values())),
    ignored=st.sets(st.sampled_from(SPAM[:3])),
    copyuid=st.one_of(
        st.none(),
        st.binary(max_size=30).map(lambda said: b"x" + said),  # (none that reads as a COPYUID)
        st.dictionaries(st.integers(1, 5), st.sampled_from(["named", "other", "left out"])),
    ),
)
def test_what_a_copyuid_says_against_what_the_server_did_each_line_says_what_the_folders_show(
    capabilities, ignored, copyuid, model, monkeypatch, tmp_path_factory
):
    """Generated: a server that moves (MOVE) or copies (COPY) some of the spam and leaves the
    rest while answering OK, and whose COPYUID names any of the UIDs, other UIDs, none, or says
    what reads as none. Each message's line says what the folders show after the run: `moved to
    Junk` where Junk holds it once and INBOX at most marked \\Deleted, `not moved` where INBOX
    holds it as it was and Junk not; never `gone before the move` (no other client deletes);
    the summary counts those moved. Nothing lost nor copied twice, then or by the runs after
    (the server then honest), which move the rest, once. (A COPY's COPYUID naming a copy not
    made is believed: docs/mail.md; not generated.)"""
    server = a_server(capabilities)
    if isinstance(copyuid, dict) and "MOVE" not in capabilities:  # (COPY's: a COPYUID never names a copy not made)
        ignored_uids = {uid for uid, (m, _, _) in server.folders["INBOX"]["messages"].items() if m in ignored}
        copyuid = {uid: "other" if how == "named" and uid in ignored_uids else how for uid, how in copyuid.items()}
    server.connection = type("Server", (SaysItsOwnCopyuid,), {"ignore": ignored, "said": copyuid})
    monkeypatch.setattr(imapscan, "Session", server.session())
    state, lines = tmp_path_factory.mktemp("state") / "state", {}
    counts = imapscan.scan(
        URL,
        model.classes,
        lambda: model,
        "Junk",
        state_path=str(state),
        on_message=lambda name, label, probability, action: lines.update({int(name.rsplit("=", 1)[1]): action}),
    )
    arrived = [SPAM[0], HAM[0], SPAM[1], SPAM[2], HAM[1]]
    holds(server, arrived)
    for uid, message in enumerate(arrived, 1):
        inbox, deleted, junk = where(server, message)
        if message in HAM:
            assert lines[uid] == "kept"
        elif lines[uid] == "moved to Junk":
            assert junk == 1 and inbox == deleted, (uid, inbox, deleted, junk)
        else:
            assert lines[uid].startswith("not moved") and (inbox, deleted, junk) == (1, 0, 0), (uid, lines[uid])
    assert counts["moved"] == list(lines.values()).count("moved to Junk")
    server.connection = None
    monkeypatch.setattr(imapscan, "Session", server.session())
    for _ in range(2):
        imapscan.scan(URL, model.classes, lambda: model, "Junk", state_path=str(state))
        holds(server, arrived)
    holds(server, arrived, done=True)


@pytest.mark.parametrize("move_to", [None, "Junk"], ids=["keyword alone", "keyword and move"])
@pytest.mark.parametrize("capabilities", SERVERS.values(), ids=SERVERS.keys())
def test_a_spam_deleted_between_the_scan_and_its_keyword_is_not_said_flagged(
    capabilities, move_to, model, monkeypatch, tmp_path
):
    """Another client deletes a spam after the scan judged it and before its STORE: a UID STORE
    of a message gone is answered OK (RFC 9051), so the keyword path, which read nothing after
    it, said "flagged" and counted it. Now what was acted on is decided for every path as for a
    move: the messages the folder still holds after the STORE."""
    server = a_server(capabilities)
    monkeypatch.setattr(imapscan, "Session", server.session())
    deleted_before_act(server, SPAM[1], monkeypatch)
    counts, said = scanned_saying(model, tmp_path, move_to, "$Junk")
    done, gone = (
        ("flagged $Junk and moved to Junk", "gone before the move")
        if move_to
        else ("flagged $Junk", "gone before it was flagged")
    )
    assert counts["acted"] == 2 and said.count(done) == 2 and said.count(gone) == 1, said
    assert sorted(said) == sorted([done, done, gone, "kept", "kept"])
    inbox = [(m, flags) for m, flags, _ in server.folders["INBOX"]["messages"].values() if "\\Deleted" not in flags]
    junk = [m for m, _, _ in server.folders["Junk"]["messages"].values()]
    assert sorted(m for m, flags in inbox if "$Junk" in flags) == ([] if move_to else sorted([SPAM[0], SPAM[2]]))
    assert sorted(junk) == (sorted([SPAM[0], SPAM[2]]) if move_to else [])


@pytest.mark.parametrize("capabilities", SERVERS.values(), ids=SERVERS.keys())
def test_a_message_the_user_moved_back_out_of_junk_is_not_moved_again(capabilities, model, monkeypatch, tmp_path):
    """A message moved back from Junk by the user keeps imap-scan's keyword (a mail program's
    MOVE keeps keywords; only the Dovecot recipe takes it away): it read as a move begun whose
    copy was not in Junk, and was moved to Junk again whatever the model said (the user's
    correction undone each time). Now a move begun without its copy is the model's to decide
    again: the ham stays, without the keyword; a spam so marked is moved, once."""
    server = Server(capabilities, {})
    server.folders["Junk"] = {"validity": 9, "next": 1, "messages": {}}
    server.append("INBOX", HAM[0], flags={imapscan.MARK})
    server.append("INBOX", SPAM[0], flags={imapscan.MARK})
    monkeypatch.setattr(imapscan, "Session", server.session())
    for attempt in range(2):
        imapscan.scan(URL, model.classes, lambda: model, "Junk", state_path=str(tmp_path / f"state{attempt}"))
        assert where(server, HAM[0]) == (1, 0, 0)
        assert [flags for m, flags, _ in server.folders["INBOX"]["messages"].values() if m == HAM[0]] == [set()]
        holds(server, [SPAM[0]], done=True)


def test_a_message_the_user_copied_back_out_of_junk_is_not_deleted(model, monkeypatch, tmp_path):
    """A user's correction made as mutt (or a client set to mark as deleted) makes it: the
    message copied from Junk to INBOX with its flags (imap-scan's keyword, \\Seen, \\Flagged,
    the user's own), the one in Junk marked \\Deleted, expunged later. The copy in Junk about to
    go read as the copy of a move begun, and the scan finished that move: it deleted the INBOX
    message, and the client's expunge then took the last copy (the message lost). A copy marked
    \\Deleted is no copy of a move begun (nbtext's own copies never carry it)."""
    server = Server({"UIDPLUS"}, {})
    server.folders["Junk"] = {"validity": 9, "next": 1, "messages": {}}
    date = "29-Nov-2026 04:00:00 +0000"
    user_flags = {imapscan.MARK, "\\Seen", "\\Flagged", "$Label1"}
    server.append("Junk", HAM[0], flags={imapscan.MARK, "\\Seen", "\\Deleted"}, date=date)
    server.append("INBOX", HAM[0], flags=user_flags, date=date)
    monkeypatch.setattr(imapscan, "Session", server.session())
    imapscan.scan(URL, model.classes, lambda: model, "Junk", state_path=str(tmp_path / "state"))
    inbox = [flags for m, flags, _ in server.folders["INBOX"]["messages"].values() if m == HAM[0]]
    assert inbox == [user_flags - {imapscan.MARK}]


class SaysItKeepsKeywords(Connection):
    """A server whose PERMANENTFLAGS say \\* (every keyword kept), whatever it keeps."""

    def keeps_keywords(self):
        return True


class JunkKeepsNoKeyword(Connection):
    """A server whose folder Junk keeps no keyword (its PERMANENTFLAGS say so: no \\*), INBOX every one."""

    def keeps_keywords(self):
        return self.folder.name != "Junk"

    def copy(self, uid_set, target):
        junk = self.server.folders["Junk"]
        first = junk["next"]
        answer = super().copy(uid_set, target)
        for uid in range(first, junk["next"]):
            junk["messages"][uid][1].intersection_update({"\\Seen", "\\Answered", "\\Flagged", "\\Draft"})
        return answer


@pytest.mark.parametrize("permanent_flags", ["truthful", "saying \\*"])
@pytest.mark.parametrize("capabilities", [{"UIDPLUS"}, {"MOVE", "UIDPLUS"}], ids=["no MOVE", "MOVE"])
def test_a_server_that_keeps_no_keyword_moves_only_with_move(
    capabilities, permanent_flags, model, monkeypatch, tmp_path
):
    """Without the keyword kept, a COPY whose answer is lost could not be told from one never
    made: such a server without MOVE is refused in one line before anything is copied (the
    messages stay, unmarked): by Junk's PERMANENTFLAGS, before anything is marked, or, where
    they say every keyword is kept, by INBOX's messages, which do not carry it after its STORE.
    With MOVE (one command that moves or does not) the scan moves."""
    server = a_server(capabilities)
    server.keywords = False
    server.connection = SaysItKeepsKeywords if permanent_flags == "saying \\*" else None
    failed = scanned(server, model, monkeypatch, tmp_path / "state")
    if "MOVE" in capabilities:
        assert failed is None
        holds(server, SPAM[:3] + HAM[:2], done=True)
    else:
        assert failed == "NbtextError" and "COPY" not in server.said
        assert ("STORE" in server.said) == (permanent_flags == "saying \\*")
        assert all(where(server, m) == (1, 0, 0) for m in SPAM[:3] + HAM[:2])
        said = r"did not keep the keyword \$NbtextMoved" if server.connection else r"Junk: the folder keeps no keyword"
        with pytest.raises(NbtextError, match=said):
            imapscan.scan(URL, model.classes, lambda: model, "Junk", state_path=str(tmp_path / "state"))


@pytest.mark.parametrize("capabilities", SERVERS.values(), ids=SERVERS.keys())
def test_a_target_that_keeps_no_keyword_is_refused_before_anything_is_marked_or_copied(
    capabilities, model, monkeypatch, tmp_path
):
    """Attack 59b: on a server without MOVE, a Junk that keeps no keyword (where INBOX keeps
    them) was given a copy of the same spam each run: its copies carry no MARK, which is how a
    copy is found. Now, without MOVE, Junk's PERMANENTFLAGS (its SELECT's: an EXAMINE's keep
    none) are read before anything is marked: one keeping no keyword is refused in one line,
    nothing marked or copied, each run. With MOVE the scan moves, once."""
    server = a_server(capabilities)
    server.connection = JunkKeepsNoKeyword
    for _ in range(3):
        server.said = []
        failed = scanned(server, model, monkeypatch, tmp_path / "state")
        if "MOVE" in capabilities:
            assert failed is None
            holds(server, SPAM[:3] + HAM[:2], done=True)
        else:
            assert failed == "NbtextError" and not {"STORE", "COPY"} & set(server.said), server.said
            assert all(where(server, m) == (1, 0, 0) for m in SPAM[:3] + HAM[:2])
            assert not any(flags for m, flags, _ in server.folders["INBOX"]["messages"].values())
    if "MOVE" not in capabilities:
        with pytest.raises(
            NbtextError, match=r"^imap://alice@example\.org/Junk: the folder keeps no keyword"
        ) as refused:
            imapscan.scan(URL, model.classes, lambda: model, "Junk", state_path=str(tmp_path / "state"))
        assert "\n" not in str(refused.value)


# --- a message the server would not send is tried again ------------------------------------------
def scanned_names(server, model, monkeypatch, state):
    """(the UIDs a run classified, those it skipped) of one run (moving spam to Junk)."""
    monkeypatch.setattr(imapscan, "Session", server.session())
    said, skipped = [], []
    imapscan.scan(
        URL,
        model.classes,
        lambda: model,
        "Junk",
        state_path=str(state),
        on_message=lambda name, *rest: said.append(int(name.rsplit("=", 1)[1])),
        on_error=lambda doc, message: skipped.append(int(doc.name.rsplit("=", 1)[1])),
    )
    return said, skipped


@pytest.mark.parametrize("capabilities", SERVERS.values(), ids=SERVERS.keys())
def test_a_message_refused_on_one_run_and_sent_on_the_next_is_classified_and_moved(
    capabilities, model, monkeypatch, tmp_path
):
    """Issue 49: a message the server refused to send was skipped and the state moved past it:
    a spam refused once stayed in INBOX for good. Now the state keeps it to be tried again:
    refused on run 1 (the others scanned and moved), sent on run 2, it is classified and moved
    there, once, and the state keeps nothing more to try."""
    server = a_server(capabilities)
    state = tmp_path / "state"
    server.unsent = {SPAM[1]}
    said, skipped = scanned_names(server, model, monkeypatch, state)
    assert skipped == [3] and sorted(said) == [1, 2, 4, 5]
    assert where(server, SPAM[1]) == (1, 0, 0) and where(server, SPAM[0])[2] == 1
    server.unsent = set()
    said, skipped = scanned_names(server, model, monkeypatch, state)
    assert said == [3] and skipped == []
    holds(server, SPAM[:3] + HAM[:2], done=True)
    assert "skipped" not in imapscan.read_state(str(state))[URL]


@pytest.mark.filterwarnings("ignore::UserWarning")  # (messages given up: said in a line, checked below)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    capabilities=st.sampled_from(list(SERVERS.values())),
    runs=st.lists(st.tuples(st.sets(st.integers(0, 6)), st.booleans()), min_size=1, max_size=6),
)
def test_messages_refused_on_any_runs_are_each_classified_once_or_given_up_after_three(
    capabilities, runs, model, monkeypatch, tmp_path_factory
):
    """Generated: on each run the server refuses to send some of the messages (and new mail may
    arrive between runs): a message is classified on the first run that reads it, once, unless
    TRIES runs skipped it first: then it is given up, said in a warning, and left where it was.
    No spam is lost or copied twice; the state file stays readable."""
    import warnings

    server = a_server(capabilities)
    state = tmp_path_factory.mktemp("state") / "state"
    arrived = [SPAM[0], HAM[0], SPAM[1], SPAM[2], HAM[1]]
    tries, classified, given_up = {}, {}, set()
    for unsent, new_mail in runs:
        server.unsent = {arrived[n] for n in unsent if n < len(arrived)}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            said, skipped = scanned_names(server, model, monkeypatch, state)
        for uid in said:
            assert uid not in classified, f"UID {uid} classified twice"
            classified[uid] = True
        for uid in skipped:
            tries[uid] = tries.get(uid, 0) + 1
            assert tries[uid] <= imapscan.TRIES
        now_given_up = {uid for uid, n in tries.items() if n == imapscan.TRIES} - given_up
        assert bool(now_given_up) == any("no longer tried" in str(w.message) for w in caught)
        given_up |= now_given_up
        for uid in server.folders["INBOX"]["messages"]:  # each classified, or skipped (to try again or given up)
            assert uid in classified or uid in tries, uid
        assert not set(said) & given_up
        holds(server, arrived)
        imapscan.read_state(str(state))
        if new_mail and len(arrived) < 7:
            arrived.append([SPAM[3], HAM[2]][len(arrived) - 5])
            server.append("INBOX", arrived[-1])
    server.unsent = set()
    said, skipped = scanned_names(server, model, monkeypatch, state)
    assert not skipped and not set(said) & (set(classified) | given_up)
    for uid in server.folders["INBOX"]["messages"]:
        assert uid in classified or uid in said or uid in given_up
    left = {server.folders["INBOX"]["messages"][uid][0] for uid in given_up - set(classified)}
    holds(server, [m for m in arrived if m not in left], done=True)
    holds(server, left)  # (given up: where they were, unmarked)


@settings(max_examples=80, deadline=None)
@given(
    skipped=st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=5),
        st.lists(
            st.one_of(
                st.lists(st.one_of(st.integers(-2, 12), st.booleans(), st.none(), st.floats()), max_size=3),
                st.integers(),
                st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
            ),
            max_size=4,
        ),
    )
)
def test_a_damaged_list_of_skipped_messages_is_refused_in_one_line(skipped, tmp_path_factory):
    """The state's messages to try again: [UID, runs] pairs of distinct UIDs 1..last_uid,
    1..TRIES - 1 runs, at most SKIPPED_KEPT of them. Anything else is the one line every damaged
    state file is; a state file without them (an older build's) reads as before."""
    valid = (
        isinstance(skipped, list)
        and all(
            isinstance(p, list)
            and len(p) == 2
            and all(type(v) is int for v in p)
            and 1 <= p[0] <= 9
            and 1 <= p[1] < imapscan.TRIES
            for p in skipped
        )
        and len({p[0] for p in skipped}) == len(skipped)
    )
    read_or_refused(tmp_path_factory.mktemp("state") / "state", "skipped", skipped, valid)


def read_or_refused(path, key, value, valid):
    """A state file whose folder (last UID 9) holds `value` under `key`: read as it is where
    `valid`, else the one line every damaged state file is; without it, read as before."""
    folder = {"uid_validity": 7, "last_uid": 9, key: value}
    path.write_text(json.dumps({"version": 1, "folders": {URL: folder}}))
    if valid:
        assert imapscan.read_state(str(path))[URL][key] == value
    else:
        with pytest.raises(NbtextError, match="is not a state file of nbtext imap-scan"):
            imapscan.read_state(str(path))
    del folder[key]
    path.write_text(json.dumps({"version": 1, "folders": {URL: folder}}))
    assert imapscan.read_state(str(path)) == {URL: folder}


@settings(max_examples=60, deadline=None)
@given(
    stalled=st.one_of(
        st.integers(-3, 12),
        st.integers(2**32 - 2, 2**32 + 1),
        st.none(),
        st.booleans(),
        st.floats(),
        st.text(max_size=3),
    )
)
def test_a_damaged_batch_stalled_on_is_refused_in_one_line(stalled, tmp_path_factory):
    """The state's batch stalled on (its last UID, which the next run asks for a message at a
    time up to): a UID past the folder's last UID scanned. Anything else is the one line every
    damaged state file is; without it (an older build's file) the state reads as before."""
    valid = type(stalled) is int and 9 < stalled < 2**32
    read_or_refused(tmp_path_factory.mktemp("state") / "state", "stalled", stalled, valid)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    depth=st.sampled_from([900, 1100, 30_000, 300_000]),
    where=st.sampled_from(["the file", "a folder", "skipped", "a pair"]),
    brackets=st.sampled_from(["[]", "{}"]),
)
def test_a_state_file_nested_past_pythons_recursion_is_refused_in_one_line(depth, where, brackets, tmp_path_factory):
    """Attack 58: a state file of JSON nested deeper than Python's recursion (`[[[...]]]`, a
    thousand levels and more, anywhere in it) was a RecursionError traceback out of read_state,
    the one reader of the state file. Now it is the one line of every damaged state file,
    through the command line (read before any connection)."""
    from click.testing import CliRunner

    from nbtext.cli.commands import cli

    tmp = tmp_path_factory.mktemp("nested")
    path, model_path = tmp / "state", tmp / "m.model"
    nbtext.train(["cheap pills", "lunch notes"], ["spam", "ham"], min_count=1).save(str(model_path))
    opening, closing = brackets[0] * depth, brackets[1] * depth
    if brackets == "{}":  # (an object's members: "a": {"a": ... {}})
        opening, closing = '{"a":' * depth, "{}" + "}" * depth
    nested = opening + closing
    value = {
        "the file": nested,
        "a folder": '{"version": 1, "folders": {"%s": %s}}' % (URL, nested),
        "skipped": '{"version": 1, "folders": {"%s": {"uid_validity": 7, "last_uid": 9, "skipped": %s}}}'
        % (URL, nested),
        "a pair": '{"version": 1, "folders": {"%s": {"uid_validity": 7, "last_uid": 9, "skipped": [[1, %s]]}}}'
        % (URL, nested),
    }[where]
    path.write_text(value)
    result = CliRunner().invoke(
        cli,
        [
            "imap-scan",
            "-m",
            str(model_path),
            "--move-to",
            "Junk",
            "--state",
            str(path),
            "imap://alice@127.0.0.1:1/INBOX",
        ],
        env={"NBTEXT_IMAP_PASSWORD": "pw"},
    )
    one_line_error(result, "is not a state file of nbtext imap-scan")
    assert path.read_text() == value


@pytest.mark.parametrize("kind", ["/dev/zero", "FIFO", "folder"])
def test_a_state_path_that_is_no_regular_file_is_refused_before_it_is_read(kind, tmp_path):
    """Attack 58: imap-scan read its --state file whole, whatever it was: /dev/zero grew until
    memory ran out (here under a 2 GB limit: "Error: out of memory"; without one, the machine's),
    a FIFO waited for a writer for ever, and each had a lock file made beside it (as root,
    /dev/zero.lock). Now, as every model file's reader does, what is not a regular file is
    refused in one line before a lock is made or it is opened; none is made beside it."""
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    path = {"/dev/zero": "/dev/zero", "folder": tmp_path}.get(kind, tmp_path / "state")
    if kind == "FIFO":
        os.mkfifo(path)
    model_path = tmp_path / "m.model"
    nbtext.train(["cheap pills", "lunch notes"], ["spam", "ham"], min_count=1).save(str(model_path))
    lock = Path(os.path.realpath(path) + ".lock")
    assert not lock.exists()

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    nbtext_command = Path(sys.executable).with_name("nbtext")
    arguments = ["imap-scan", "-m", model_path, "--move-to", "Junk", "--state", path, "imap://alice@127.0.0.1:1/INBOX"]
    try:
        result = subprocess.run(
            [nbtext_command, *map(str, arguments)],
            capture_output=True,
            timeout=30,
            preexec_fn=limited,
            env=os.environ | {"NBTEXT_IMAP_PASSWORD": "pw"},
        )
        said = result.stderr.decode()
        assert result.returncode == 1 and said.count("\n") == 1 and "Traceback" not in said, said
        assert "is not a regular file" in said or "is a folder" in said, said
        assert not lock.exists()
    finally:
        if kind == "/dev/zero":  # (a build that made one: not left in /dev)
            lock.unlink(missing_ok=True)


# --- a move begun is MARK and the state's record; what a line says is what the folder shows -------
def users_copies(capabilities):
    """A server whose Junk holds a ham and a spam an earlier run moved (MARK), each copied back
    to INBOX by the user (the keyword, INTERNALDATE and size kept): the ham's Junk copy left as
    it was, the spam's too; and one new spam."""
    server = Server(capabilities, {})
    server.folders["Junk"] = {"validity": 9, "next": 1, "messages": {}}
    for n, message in enumerate([HAM[0], SPAM[0]]):
        date = f"29-Nov-2026 04:00:0{n} +0000"
        server.append("Junk", message, flags={imapscan.MARK, "\\Seen"}, date=date)
        server.append("INBOX", message, flags={imapscan.MARK, "\\Seen"}, date=date)
    server.append("INBOX", SPAM[1])
    return server


@pytest.mark.parametrize("between", ["first run", "scanned before", "state lost", "new UIDVALIDITY"])
@pytest.mark.parametrize("capabilities", SERVERS.values(), ids=SERVERS.keys())
def test_a_message_carrying_the_keyword_that_no_record_names_is_judged_and_never_copied_twice(
    capabilities, between, model, monkeypatch, tmp_path
):
    """Issue 49: a message carrying $NbtextMoved was a move begun, its copy in Junk enough to
    delete it: a ham the user copied back out of Junk was deleted, whatever the model said. Now a
    move begun is one the state's record names (written before the keyword is given); one no
    record names, however the state came to lack it (a first run, a record cleared, the state
    file lost, a new UIDVALIDITY), is judged: a ham stays in INBOX (the keyword taken from it),
    a spam is deleted from INBOX (its copy in Junk already: none made twice), new mail moved."""
    server = users_copies(capabilities)
    state = tmp_path / "state"
    monkeypatch.setattr(imapscan, "Session", server.session())
    if between != "first run":  # (an earlier scan, its record cleared, remembered nothing past them)
        imapscan.write_state(str(state), {URL: {"uid_validity": 1, "last_uid": 0}})
    if between == "state lost":
        state.unlink()
    elif between == "new UIDVALIDITY":  # (a record of the old UIDs: they name other messages now)
        imapscan.write_state(str(state), {URL: {"uid_validity": 1, "last_uid": 0, "moving": [1, 2]}})
        server.renumber("INBOX")
    said = scanned_saying(model, tmp_path, "Junk")[1]
    assert where(server, HAM[0]) == (1, 0, 1) and where(server, SPAM[1])[1:] in [(0, 1), (1, 1)]
    assert [flags for m, flags, _ in server.folders["INBOX"]["messages"].values() if m == HAM[0]] == [{"\\Seen"}]
    inbox, deleted, junk = where(server, SPAM[0])
    assert junk == 1 and inbox == deleted, (inbox, deleted, junk)
    assert said == ["kept", "moved to Junk", "moved to Junk"], said
    assert "moving" not in imapscan.read_state(str(state))[URL]


class Unreliable(Connection):
    """A server whose COPY, MOVE and keyword STORE are answered OK and each done for some of the
    messages named (`done`, drawn by the test: a function of the command and its UIDs), COPYUID
    said (with UIDPLUS) for those done alone, and that keeps the user's keyword $Junk or not."""

    done = None

    def copy(self, uid_set, target):
        kept = [uid for uid in self.uids(uid_set) if self.done("COPY", uid)]
        return super().copy(",".join(map(str, kept)), target) if kept else [None]

    def move(self, uid_set, target):
        kept = [uid for uid in self.uids(uid_set) if self.done("MOVE", uid)]
        if kept:  # (Connection's move, its copy not drawn again)
            Connection.copy(self, ",".join(map(str, kept)), target)
            for uid in kept:
                del self.open["messages"][uid]
        return [None]

    def store(self, uid_set, how, flags):
        if "$Junk" in flags:  # (the user's keyword: kept or not; MARK and \\Deleted as the server keeps them)
            kept = [uid for uid in self.uids(uid_set) if self.done("STORE", uid)]
            super().store(",".join(map(str, kept)), how, "($Junk)") if kept else None
            flags = flags.replace("$Junk", "").replace("( ", "(").replace(" )", ")")
            if flags == "()":
                return [None]
        return super().store(uid_set, how, flags)


@pytest.mark.filterwarnings("ignore::UserWarning")  # (moves given up after TRIES runs: said in a line)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    capabilities=st.sampled_from(list(SERVERS.values())),
    keyword=st.sampled_from([None, "$Junk"]),
    data=st.data(),
)
def test_a_line_says_moved_or_flagged_only_where_the_folder_shows_it_and_nothing_is_lost(
    capabilities, keyword, data, model, monkeypatch, tmp_path_factory
):
    """Generated: a server that answers OK to every COPY, MOVE and keyword STORE and does each
    for some of the messages only (drawn), on every server shape, over runs. After each run:
    no spam lost or in Junk twice, no ham touched; a line saying `moved to Junk` names a message
    no longer in INBOX (or marked \\Deleted there, without UIDPLUS) with its copy in Junk, one
    saying `flagged $Junk` one carrying it; the summary's counts are those lines'. Once the
    server does all it says, every spam is in Junk, once."""
    server = a_server(capabilities)
    server.connection = Unreliable
    Unreliable.done = staticmethod(lambda command, uid: data.draw(st.booleans(), label=f"{command} {uid}"))
    monkeypatch.setattr(imapscan, "Session", server.session())
    state = tmp_path_factory.mktemp("state") / "state"
    arrived = [SPAM[0], HAM[0], SPAM[1], SPAM[2], HAM[1]]
    for _ in range(data.draw(st.integers(1, 3), label="runs")):
        said: list = []
        counts = imapscan.scan(
            URL,
            model.classes,
            lambda: model,
            "Junk",
            keyword,
            state_path=str(state),
            on_message=lambda name, label, probability, action, said=said: said.append(
                (int(name.rsplit("=", 1)[1]), action)
            ),
        )
        holds(server, arrived)
        for uid, action in said:
            message, flags, _ = server.folders["INBOX"]["messages"].get(uid, (None, set(), None))
            if "moved to Junk" in action and not action.startswith("not"):
                assert message is None or "\\Deleted" in flags, (uid, action)
            if "flagged $Junk" in action and "not flagged" not in action:
                assert message is None or "$Junk" in flags, (uid, action, flags)
        moved = sum("moved to Junk" in action and "not moved" not in action for _, action in said)
        assert counts["moved"] == moved, (counts, said)
    Unreliable.done = staticmethod(lambda command, uid: True)
    for _ in range(imapscan.TRIES):
        imapscan.scan(URL, model.classes, lambda: model, "Junk", keyword, state_path=str(state))
    holds(server, [m for m in arrived if where(server, m) != (1, 0, 0) or m in HAM], done=True)
    holds(server, arrived)


@pytest.mark.parametrize("move_to", [None, "Junk"], ids=["keyword alone", "keyword and move"])
def test_a_keyword_the_server_does_not_keep_is_said_in_each_line_and_a_warning(move_to, model, monkeypatch, tmp_path):
    """A server that keeps no keyword (PERMANENTFLAGS without \\*) answers the STORE of $Junk OK:
    the lines said `flagged $Junk`, the summary counted them, and -q said nothing. Now each line
    says it was not flagged (and moved where it was), the count of those flagged is 0, and one
    warning line (shown with -q too) says why."""
    server = a_server({"MOVE", "UIDPLUS"})
    server.keywords = False
    monkeypatch.setattr(imapscan, "Session", server.session())
    with pytest.warns(UserWarning, match=r"3 messages not flagged \$Junk: the server answered its STORE OK"):
        counts, said = scanned_saying(model, tmp_path, move_to, "$Junk")
    not_flagged = "not flagged: the server did not keep the keyword $Junk"
    assert sorted(said) == sorted(["kept"] * 2 + [f"moved to Junk; {not_flagged}" if move_to else not_flagged] * 3)
    assert counts["flagged"] == 0 and counts["moved"] == (3 if move_to else 0) and counts["acted"] == 0


@settings(max_examples=100, deadline=None)
@given(
    recorded=st.sets(st.integers(1, 2000), max_size=900),
    last=st.integers(0, 2000),
    skipped=st.sets(st.integers(1, 2000), max_size=200),
    begun_now=st.sets(st.integers(1, 2000), max_size=imapscan.BATCH),
)
def test_the_record_of_moves_begun_is_bounded_and_keeps_the_batchs_own(recorded, last, skipped, begun_now):
    """The record as the state keeps it (_record): the batch's moves begun now always, then those
    a later batch reads again (past the last UID scanned, or skipped), at most MOVING_KEPT in all,
    so the state file read back (its validator's bound) holds whatever the runs before left."""
    kept = imapscan._record(recorded, last, dict.fromkeys(skipped, 1), begun_now)
    assert set(begun_now) <= kept <= recorded | set(begun_now) and len(kept) <= imapscan.MOVING_KEPT
    assert all(uid > last or uid in skipped for uid in kept - set(begun_now))


@settings(max_examples=60, deadline=None)
@given(
    port=st.sampled_from(["", ":143"]),
    name=st.sampled_from(["INBOX", "inbox", "Inbox", "INBOX/", "iNbOx"]),
    host=st.sampled_from(["example.org", "EXAMPLE.org", "example.org."]),
)
def test_one_folder_however_spelled_is_one_entry_of_the_state(port, name, host, tmp_path_factory):
    """One folder has one state: the URL with or without the scheme's own port, INBOX in any
    case, the host in any case or with its final dot, are one key (state_key); a state an older
    nbtext wrote under the spelling it was given is found under it (_remembered, as the scan
    asks) and kept under the key from then on. Another
    port, folder or user is another folder."""
    from nbtext.reading.imapurl import parse

    spelled = f"imap://alice@{host}{port}/{name}"
    assert imapscan.state_key(parse(spelled)) == URL
    path = tmp_path_factory.mktemp("state") / "state"
    path.write_text(json.dumps({"version": 1, "folders": {spelled: {"uid_validity": 7, "last_uid": 9}}}))
    state = imapscan.read_state(str(path))
    assert imapscan._remembered(state, URL, 7) == {"uid_validity": 7, "last_uid": 9} and list(state) == [URL]
    for other in [
        "imap://alice@example.org:144/INBOX",
        "imap://alice@example.org/INBOX/x",
        "imap://bob@example.org/INBOX",
    ]:
        assert imapscan.state_key(parse(other)) != URL
    assert imapscan.state_key(parse("imaps://alice@example.org:993/INBOX")) == "imaps://alice@example.org/INBOX"
    assert imapscan.state_key(parse("imap://alice@[0:0::1]:143/INBOX")) == "imap://alice@[::1]/INBOX"


@settings(max_examples=80, deadline=None)
@given(
    moving=st.one_of(
        st.none(),
        st.integers(),
        st.lists(
            st.one_of(st.integers(-2, 14), st.booleans(), st.none(), st.floats(), st.text(max_size=2)), max_size=5
        ),
    )
)
def test_a_damaged_record_of_moves_begun_is_refused_in_one_line(moving, tmp_path_factory):
    """The state's record of moves begun: distinct UIDs past the folder's last UID scanned (9)
    or skipped, at most MOVING_KEPT. Anything else is the one line every damaged state file is;
    a state file without it (an older build's) reads as before: every message carrying MARK
    then one no record names (judged, its copy looked for before a move)."""
    valid = (
        isinstance(moving, list)
        and all(type(uid) is int and 9 < uid < 2**32 for uid in moving)
        and len(set(moving)) == len(moving)
    )
    read_or_refused(tmp_path_factory.mktemp("state") / "state", "moving", moving, valid)


@settings(max_examples=150, deadline=None)
@given(
    spans=st.lists(st.tuples(st.integers(1, 60), st.integers(0, 5), st.booleans()), max_size=8),
    asked=st.sets(st.integers(1, 70), max_size=20),
    said=st.booleans(),
    trailer=st.sampled_from(["", "] Copied", "] [x]"]),
)
def test_a_copyuid_names_the_messages_it_says_were_copied_and_no_other(spans, asked, said, trailer):
    """RFC 4315's COPYUID (`VALIDITY SOURCE-SET TARGET-SET`, sets of UIDs and ranges N:M either
    way round, overlapping or not): of the UIDs asked, those its source set names are copied,
    no other; a COPY without one, or with one that does not read as one (None), has its copies
    looked for in the target instead."""
    from types import SimpleNamespace

    source = ",".join(f"{a}:{a + n}" if n and forward else f"{a + n}:{a}" if n else f"{a}" for a, n, forward in spans)
    data = [f"9 {source} 1:{len(spans) or 1}{trailer}".encode()] if said else [None]
    session = SimpleNamespace(client=SimpleNamespace(response=lambda code: (code, data)))
    named = imapscan._copyuid_sources(session, sorted(asked))
    if not said or not spans:  # (none said, or none that reads as one: the copies looked for)
        assert named is None
    else:
        assert named == {uid for uid in asked if any(a <= uid <= a + n for a, n, _ in spans)}


# --- the real Dovecot (tests/dovecot_server.py), its answers lost and nbtext killed ----------------------
import test_imap  # noqa: E402
from test_imap import PASSWORD, run, url  # noqa: E402
from nbtext.reading.imapurl import parse  # noqa: E402

dovecot, spamassassin = (
    test_imap.dovecot,
    test_imap.spamassassin,
)  # the fixtures: a Dovecot of the test's own, or a skip

# The capabilities the server says after login: with MOVE (Dovecot's own), or without MOVE, or without UIDPLUS too
DOVECOTS = {
    "MOVE": "",
    "no MOVE": "imap_capability = IMAP4rev1 LITERAL+ SASL-IR ID ENABLE IDLE NAMESPACE UIDPLUS SPECIAL-USE",
    "no MOVE, no UIDPLUS": "imap_capability = IMAP4rev1 LITERAL+ SASL-IR ID ENABLE IDLE NAMESPACE SPECIAL-USE",
}
# Each command of a move on such a server, as imaplib sends it
MOVE_COMMANDS = {
    "MOVE": [rb"UID STORE .*\$NbtextMoved", rb"UID MOVE "],
    "no MOVE": [rb"UID STORE .*\$NbtextMoved", rb"UID COPY ", rb"UID STORE .*\\Deleted", rb"UID EXPUNGE "],
    "no MOVE, no UIDPLUS": [rb"UID STORE .*\$NbtextMoved", rb"UID COPY ", rb"UID STORE .*\\Deleted"],
}


class Dropping(LoopbackProxy):
    """A proxy in front of the server's `port` that lets the first command matching `command`
    through and, once the server has answered it, drops the connection before the answer
    reaches nbtext (`how` "lost") or kills nbtext's process `pid` ("killed")."""

    def __init__(self, port, command, how):
        self.command, self.how, self.pid, self.tag = command, how, None, None
        super().__init__(port)

    def join(self, near, far):
        import threading

        threading.Thread(target=self.commands, args=(near, far), daemon=True).start()
        threading.Thread(target=self.answers, args=(far, near), daemon=True).start()

    def commands(self, near, far):
        for line in self.lines(near):
            if self.tag is None and re.search(self.command, line):
                self.tag = line.split(b" ", 1)[0] + b" "
            try:
                far.sendall(line)
            except OSError:  # (dropped by the other side)
                return

    def answers(self, far, near):
        import os
        import signal
        import socket

        for line in self.lines(far):
            if self.tag is not None and line.startswith(self.tag):
                if self.how == "killed":
                    os.kill(self.pid, signal.SIGKILL)
                break
            try:
                near.sendall(line)
            except OSError:
                break
        for end in (near, far):  # (shut down first: a recv waiting on it in the other thread holds it open)
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    @staticmethod
    def lines(end):
        pending = b""
        while True:
            try:
                data = end.recv(65536)
            except OSError:
                return
            if not data:
                return
            *whole, pending = (pending + data).split(b"\n")
            yield from (line + b"\n" for line in whole)


@pytest.mark.parametrize("server", DOVECOTS)
def test_a_real_dovecots_answer_lost_or_nbtext_killed_at_each_command_copies_nothing_twice(
    dovecot, model, tmp_path, server
):
    """Against Dovecot (with MOVE, without, without UIDPLUS too): each command of a move let
    through, then its answer lost (the connection dropped) or nbtext killed (SIGKILL) before
    it reads it; then the scan run again, and again with its state file lost: each spam in
    Junk once, each ham where it was, nothing lost."""
    import subprocess

    dovecot.start(extra=DOVECOTS[server])
    path = tmp_path / "m.model"
    model.save(str(path))
    for n, (command, how) in enumerate((c, h) for c in MOVE_COMMANDS[server] for h in ("lost", "killed")):
        source, junk = f"Scan{n}", f"Junk{n}"
        arrived = [spam(n * 10 + i) for i in range(4)] + [ham(n * 10 + i) for i in range(2)]
        dovecot.append(source, arrived)
        dovecot.append(junk, [])
        state = tmp_path / f"{n}.state"
        scan = ["imap-scan", "-q", "-m", path, "--move-to", junk, "--state", state]
        proxy = Dropping(dovecot.imap_port, command, how)
        failing = subprocess.Popen(
            [NBTEXT, *map(str, scan), f"imap://alice@127.0.0.1:{proxy.port}/{source}"],
            env={"PATH": "/usr/bin:/bin", "NBTEXT_IMAP_PASSWORD": PASSWORD},
            stderr=subprocess.PIPE,
        )
        proxy.pid = failing.pid
        said = failing.communicate(timeout=120)[1].decode()
        proxy.close()
        assert proxy.tag is not None and failing.returncode == (-9 if how == "killed" else 1), (command, said)
        for _ in range(2):  # again, then with the state file lost
            run(*scan, url(dovecot, source))
            kept, moved = dovecot_flags(dovecot, source), dovecot_flags(dovecot, junk)
            assert sorted(moved) == sorted(m.replace(b"\n", b"\r\n") for m in arrived[:4]), (command, how)
            assert sorted(m for m, flags in kept.items() if "\\Deleted" not in flags) == sorted(
                m.replace(b"\n", b"\r\n") for m in arrived[4:]
            ), (command, how)
            state.unlink()


def dovecot_flags(dovecot, folder):
    """{message bytes: its flags} of a folder (each message once: asserted)."""
    client = dovecot.imap()
    assert client.select(folder, readonly=True)[0] == "OK"
    _, data = client.uid("FETCH", "1:*", "(FLAGS BODY.PEEK[])")
    client.logout()
    found = [
        (item[1], re.search(rb"FLAGS \(([^)]*)\)", item[0])[1].decode()) for item in data if isinstance(item, tuple)
    ]
    assert len({m for m, _ in found}) == len(found), f"a message twice in {folder}"
    return dict(found)


class StallingOnBytes(LoopbackProxy):
    """A proxy in front of the server's `port` that never passes on a UID FETCH of messages'
    bytes naming one of `uids` (kept in `held`): a server that stalls on those messages."""

    def __init__(self, port, uids):
        self.uids, self.held = {b"%d" % uid for uid in uids}, []
        super().__init__(port)

    def join(self, near, far):
        import threading

        threading.Thread(target=self.pass_on, args=(near, far, True), daemon=True).start()
        threading.Thread(target=self.pass_on, args=(far, near, False), daemon=True).start()

    def pass_on(self, source, sink, commands):
        import socket

        for line in Dropping.lines(source):
            asked = re.search(rb"UID FETCH ([\d,]+) \(UID BODY\.PEEK\[\]", line) if commands else None
            if asked and set(asked[1].split(b",")) & self.uids:
                self.held.append(line)
                continue
            try:
                sink.sendall(line)
            except OSError:
                break
        for end in (source, sink):  # (as Dropping: shut down first, a recv waiting on it in the other thread)
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()


@pytest.mark.parametrize("server", DOVECOTS)
def test_a_real_dovecots_move_begun_is_finished_though_it_stalls_on_the_messages_bytes(
    dovecot, model, tmp_path, server
):
    """Against Dovecot (with MOVE, without, without UIDPLUS too): a move begun as a run lost
    after its COPY leaves it (recorded in the state, the message given $NbtextMoved, then
    copied to Junk), and the
    server then stalling on that message's bytes (a proxy holds back every FETCH of them). The
    scan finishes the move without asking for them: the message in Junk once and no longer in
    the folder (marked \\Deleted where there is no UIDPLUS), its line saying it was not judged;
    the ham beside it judged and kept. Was: the FETCH of its batch stalled until --time-limit,
    each run, and after 3 runs the message was given up, left in both folders."""
    dovecot.start(extra=DOVECOTS[server])
    path = tmp_path / "m.model"
    model.save(str(path))
    begun, kept = spam(90), ham(90)
    uids = dovecot.append("Scan", [begun, kept])
    dovecot.append("Junk", [])
    client = dovecot.imap()
    assert client.select("Scan")[0] == "OK"
    assert client.uid("STORE", str(uids[0]), "+FLAGS", f"({imapscan.MARK})")[0] == "OK"
    assert client.uid("COPY", str(uids[0]), "Junk")[0] == "OK"
    validity = int(client.response("UIDVALIDITY")[1][-1])
    client.logout()
    proxy = StallingOnBytes(dovecot.imap_port, [uids[0]])
    # the run's record of the move it began (written before its STORE of the keyword)
    folder = f"imap://alice@127.0.0.1:{proxy.port}/Scan"
    imapscan.write_state(
        str(tmp_path / "state"), {folder: {"uid_validity": validity, "last_uid": 0, "moving": [uids[0]]}}
    )
    try:
        done = run(
            *["imap-scan", "-m", path, "--move-to", "Junk", "--state", tmp_path / "state", "--time-limit", "20"],
            folder,
            check=False,
        )
    finally:
        proxy.close()
    assert done.returncode == 0 and proxy.held == [], (done.stderr.decode(), proxy.held)
    lines = [line.split("\t") for line in done.stdout.decode().splitlines()]
    assert [line[1:3] for line in lines] == [["-", "-"], ["ham", lines[1][2]]], lines
    assert lines[0][3] == "moved to Junk (a move an earlier run began, its copy in Junk already: not judged)"
    stored = [m.replace(b"\n", b"\r\n") for m in (begun, kept)]
    assert list(dovecot_flags(dovecot, "Junk")) == stored[:1]
    left = dovecot_flags(dovecot, "Scan")
    assert [m for m, flags in left.items() if "\\Deleted" not in flags] == stored[1:], left


@pytest.mark.parametrize("server", DOVECOTS)
def test_a_real_dovecots_copy_of_a_moved_ham_stays_and_a_move_is_said_as_dovecot_shows_it(
    dovecot, model, tmp_path, server
):
    """Against Dovecot (with MOVE, without, without UIDPLUS too): a ham an earlier run moved to
    Junk (it carries $NbtextMoved there) that the user copies back to the folder with its flags
    and date (as a mail program does offline: APPEND), leaving Junk's. Was: taken for a move begun, its copy found in Junk, the
    folder's deleted, `moved to Junk`. Now no record names it: judged, kept, the keyword taken
    from it; a new spam beside it moved (the COPYUID Dovecot says, or its copy found, without
    UIDPLUS), its line and the summary's count saying so; the state keeps no record after."""
    dovecot.start(extra=DOVECOTS[server])
    path = tmp_path / "m.model"
    model.save(str(path))
    kept, moved = ham(95), spam(95)
    dovecot.append("Junk", [])
    dovecot.append("Scan", [moved])
    client = dovecot.imap()  # (as a mail program copies it: APPEND with its flags and INTERNALDATE)
    for folder in ("Junk", "Scan"):
        answer = client.append(
            folder, f"({imapscan.MARK})", '"29-Nov-2026 04:00:00 +0000"', kept.replace(b"\n", b"\r\n")
        )
        assert answer[0] == "OK", answer
    client.logout()
    state = tmp_path / "state"
    done = run("imap-scan", "-m", path, "--move-to", "Junk", "--state", state, url(dovecot, "Scan"))
    lines = [line.split("\t") for line in done.stdout.decode().splitlines()]
    assert [(line[1], line[3]) for line in lines] == [("spam", "moved to Junk"), ("ham", "kept")], lines
    assert ": 1 spam, 1 moved to Junk;" in done.stderr.decode(), done.stderr.decode()
    stored = [m.replace(b"\n", b"\r\n") for m in (kept, moved)]
    left = dovecot_flags(dovecot, "Scan")
    assert [(m, flags) for m, flags in left.items() if "\\Deleted" not in flags] == [(stored[0], "")], left
    assert sorted(dovecot_flags(dovecot, "Junk")) == sorted(stored)
    assert "moving" not in imapscan.read_state(str(state))[imapscan.state_key(parse(url(dovecot, "Scan")))]
