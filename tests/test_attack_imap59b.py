"""An attacker's pass over imap-scan's state key and its record of moves begun (session 59):
defects found, each a strict xfail until mended. The in-memory Server is test_imap_moves'."""

import json

import pytest

from nbtext.errors import NbtextError
from nbtext.jobs import imapscan
from nbtext.reading.imapurl import parse

from test_imap_moves import HAM, SPAM, URL, Connection, Server, scanned_saying, where


@pytest.fixture(scope="module")
def model():
    import nbtext

    return nbtext.train(
        ["cheap pills now", "win cash prize", "lunch at noon", "meeting notes"],
        ["spam", "spam", "ham", "ham"],
        min_count=1,
    )


OTHER_SPELLING = "imap://alice@example.org:143/INBOX"  # (the scheme's own port: state_key's URL)


def a_state(path, folders):
    path.write_text(json.dumps({"version": 1, "folders": folders}))
    return str(path)


def begun_on(server, message):
    """`message` in INBOX as a run left it that began its move: MARK given, its copy (MARK kept,
    as COPY keeps flags) in Junk, the original not yet deleted."""
    server.append("INBOX", message, flags={imapscan.MARK})
    date = server.folders["INBOX"]["messages"][server.folders["INBOX"]["next"] - 1][2]
    server.append("Junk", message, flags={imapscan.MARK}, date=date)


def inbox_and_junk():
    server = Server({"MOVE", "UIDPLUS"}, {})
    server.folders["Junk"] = {"validity": 9, "next": 1, "messages": {}}
    return server


def scanned_with(server, folders, model, monkeypatch, tmp_path):
    """One run of the scan (moving spam to Junk) of `server`'s INBOX, its state file holding
    `folders` (spellings of INBOX as an older nbtext keyed them): the scan's counts."""
    state = a_state(tmp_path / "state", folders)
    monkeypatch.setattr(imapscan, "Session", server.session())
    return imapscan.scan(URL, model.classes, lambda: model, "Junk", state_path=state)


def test_control_a_move_begun_recorded_under_one_spelling_is_finished(model, monkeypatch, tmp_path):
    """(Holds.) The record under one spelling alone: the move begun is finished whatever the
    model says now (HAM[1]: a model retrained since the move began)."""
    server = inbox_and_junk()
    server.append("INBOX", HAM[0])
    begun_on(server, HAM[1])
    scanned_with(
        server, {OTHER_SPELLING: {"uid_validity": 1, "last_uid": 1, "moving": [2]}}, model, monkeypatch, tmp_path
    )
    assert where(server, HAM[1])[0] == where(server, HAM[1])[1] and where(server, HAM[1])[2] == 1


def test_a_move_begun_recorded_under_an_older_spelling_is_finished_when_both_are_in_the_state(
    model, monkeypatch, tmp_path
):
    """Two spellings of INBOX in one state file, scanned as far (last_uid 1), the one with the
    port holding the record of the move begun on UID 2. A merge that kept one spelling's entry
    whole dropped the other's "moving": UID 2 then read as MARK no record names, was judged
    again (ham), its MARK taken away, its copy left in Junk: the message in both folders for
    good. Expected (imapscan._remembered): the records merged, the move finished as the
    control above is."""
    server = inbox_and_junk()
    server.append("INBOX", HAM[0])
    begun_on(server, HAM[1])
    scanned_with(
        server,
        {
            URL: {"uid_validity": 1, "last_uid": 1},
            OTHER_SPELLING: {"uid_validity": 1, "last_uid": 1, "moving": [2]},
        },
        model,
        monkeypatch,
        tmp_path,
    )
    inbox, deleted, junk = where(server, HAM[1])
    assert inbox == deleted and junk == 1, (inbox, deleted, junk)


def test_an_older_spelling_of_a_replaced_folder_does_not_outrank_the_current_one(model, monkeypatch, tmp_path):
    """Two spellings of INBOX: the one with the port under the folder's current UIDVALIDITY (1,
    scanned to UID 2), the other under a UIDVALIDITY the folder had before it was replaced (5,
    scanned to UID 50). A merge that kept the one 'scanned furthest' kept the stale one: the run
    found its UIDVALIDITY changed and scanned the whole folder again from UID 1. A spam the user kept
    (moved back to INBOX, or let stay: SPAM[0] at UID 2, scanned under UIDVALIDITY 1) is
    judged again and moved to Junk, the user's correction undone. Expected: nothing to scan
    (each message was scanned under the folder's current UIDVALIDITY)."""
    server = inbox_and_junk()
    server.append("INBOX", HAM[0])
    server.append("INBOX", SPAM[0])
    counts = scanned_with(
        server,
        {
            URL: {"uid_validity": 5, "last_uid": 50},
            OTHER_SPELLING: {"uid_validity": 1, "last_uid": 2},
        },
        model,
        monkeypatch,
        tmp_path,
    )
    assert counts["scanned"] == 0 and where(server, SPAM[0]) == (1, 0, 0), (counts, where(server, SPAM[0]))


@pytest.mark.parametrize(
    "spelled",
    [
        "imap://alice@B%C3%9CCHER.example/INBOX",  # (an IDN's non-ASCII letters in upper case)
        "imap://alice@xn--bcher-kva.example/INBOX",  # (the same name as its A-label: what the resolver asks)
        "imap://alice@b%C3%BCcher%E3%80%82example/INBOX",  # (an ideographic full stop: IDNA's dot)
        "imap://alice@b%C3%BC%C2%ADcher.example/INBOX",  # (a soft hyphen, which IDNA maps to nothing)
    ],
)
def test_an_international_hosts_spellings_are_one_key(spelled):
    """state_key's promise: one folder one key, 'the host in any case'. A host name with
    non-ASCII letters is lowered only in its ASCII ones (b%C3%9CCHER), and its A-label
    (xn--bcher-kva, the one the resolver and the TLS check see) is another key, as are the
    spellings IDNA maps to that name (a full stop U+3002, a soft hyphen): each spelling its own state, each scanning the folder from its start (every message judged again)."""
    assert imapscan.state_key(parse(spelled)) == imapscan.state_key(parse("imap://alice@b%C3%BCcher.example/INBOX"))


def test_a_message_skipped_under_an_older_spelling_is_tried_again_when_both_are_in_the_state(
    model, monkeypatch, tmp_path
):
    """As above, with "skipped": the spelling with the port remembers UID 1 as one the server
    would not send (to be tried again), the other none, both scanned to UID 2. The merge keeps
    the other whole: UID 1, a spam, is never scanned (left in INBOX, no line, no warning that it
    was given up) where the merge kept the other whole. Expected: it is tried again, and moved."""
    server = inbox_and_junk()
    server.append("INBOX", SPAM[0])
    server.append("INBOX", HAM[0])
    scanned_with(
        server,
        {
            URL: {"uid_validity": 1, "last_uid": 2},
            OTHER_SPELLING: {"uid_validity": 1, "last_uid": 2, "skipped": [[1, 1]]},
        },
        model,
        monkeypatch,
        tmp_path,
    )
    assert where(server, SPAM[0]) == (0, 0, 1), where(server, SPAM[0])


class CopyuidOfOthers(Connection):
    """A server whose COPYUID (in MOVE's OK) names source UIDs 100 above those it moved."""

    def copy(self, uid_set, target):
        answer = super().copy(uid_set, target)
        if getattr(self, "copyuid", None):
            validity, sources, copies = self.copyuid.split(b" ")
            shifted = b",".join(b"%d" % (int(uid) + 100) for uid in sources.split(b","))
            self.copyuid = b" ".join([validity, shifted, copies])
        return answer


def test_a_move_whose_copyuid_names_other_messages_is_said_as_the_folders_show_it(model, monkeypatch, tmp_path):
    """MOVE moves UID 2 (a spam) to Junk and its COPYUID names UID 102: act counts a message no
    longer in INBOX and not named by COPYUID as deleted by another client, so the line says
    'gone before the move' and the summary '0 moved', while Junk holds it (no message lost or
    copied twice: what the line says is wrong). Expected: the target looked into where COPYUID
    and the folder disagree (as where COPY says none), the line 'moved to Junk'."""
    server = inbox_and_junk()
    server.connection = CopyuidOfOthers
    server.append("INBOX", HAM[0])
    server.append("INBOX", SPAM[0])
    monkeypatch.setattr(imapscan, "Session", server.session())
    counts, said = scanned_saying(model, tmp_path, "Junk")
    assert where(server, SPAM[0]) == (0, 0, 1)  # (holds: moved once, nothing lost)
    assert said == ["kept", "moved to Junk"] and counts["moved"] == 1, (said, counts)


class TargetKeepsNoKeyword(Connection):
    """A server whose folder Junk keeps no keyword (only the system flags) where INBOX keeps
    them: a maildir folder whose 26 keywords are taken, or a folder of another store."""

    def keeps_keywords(self):
        return self.folder.name != "Junk" and super().keeps_keywords()

    def copy(self, uid_set, target):
        folder = self.server.folders[target.strip('"')]
        first = folder["next"]
        answer = super().copy(uid_set, target)
        for uid in range(first, folder["next"]):
            folder["messages"][uid][1].intersection_update({"\\Seen", "\\Answered", "\\Flagged", "\\Draft"})
        return answer


def test_a_target_that_keeps_no_keyword_is_never_given_a_copy_twice(model, monkeypatch, tmp_path):
    """Without MOVE and UIDPLUS a COPY's copy is found in Junk by its MARK (_Target.copies_of
    searches KEYWORD $NbtextMoved); act refuses to move where the scanned folder keeps no
    keyword, but not where Junk does not. Then each copy is not found: each run says 'the server
    said it moved it to Junk and did not', copies the spam again, and after 3 runs gives it up
    with a warning, left in INBOX, Junk holding 3 copies of it. Expected: never a second copy
    (and nothing lost: in INBOX, or in Junk once)."""
    server = inbox_and_junk()
    server.capabilities = set()
    server.connection = TargetKeepsNoKeyword
    server.append("INBOX", HAM[0])
    server.append("INBOX", SPAM[0])
    monkeypatch.setattr(imapscan, "Session", server.session())
    state = str(tmp_path / "state")
    for _ in range(3):
        try:
            imapscan.scan(URL, model.classes, lambda: model, "Junk", state_path=state)
        except NbtextError:  # (a refusal in one line is a fine answer too)
            pass
        inbox, deleted, junk = where(server, SPAM[0])
        assert junk <= 1 and (junk == 1 or inbox == 1 and not deleted), (inbox, deleted, junk)
