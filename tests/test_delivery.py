"""A message in is a message out, or exit status 75: `filter` holds the message's bytes
before anything can fail, classifies under one guard, and writes through the one writer of
stdout (nbtext.report.output), which writes every byte or says why not. Every command's output
goes through that writer: a closed stdout or a reader gone is one line and a non-zero
status, never a traceback and never a silent loss."""

import email
import email.header
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from nbtext.cli.mailfilter import header_value, with_headers

from conftest import ROOT, run

NBTEXT = Path(sys.executable).with_name("nbtext")
DEMO = ROOT / "corpora" / "mail"
needs_executable = pytest.mark.skipif(not NBTEXT.exists(), reason="nbtext is not installed in this environment")
MESSAGE = b"Subject: free prize\nFrom: a@example.com\n\nclaim your free prize cash now, click\n"
ERROR_TAGGED = with_headers(MESSAGE, [("X-Nbtext-Class", "error")])


def shell(command, stdin=b"", **variables):
    """`command` run by sh with $NBTEXT and the given variables set; (status, stdout, stderr)."""
    environment = {**os.environ, "NBTEXT": str(NBTEXT), **{k: str(v) for k, v in variables.items()}}
    result = subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, env=environment, timeout=120)
    return result.returncode, result.stdout, result.stderr.decode()


@pytest.fixture(scope="module")
def accented_model(tmp_path_factory):
    """A model whose spam class is called 'spæm'."""
    folder = tmp_path_factory.mktemp("accented")
    model = folder / "m.model"
    result = run("train", "-o", model, f"spæm={DEMO / 'train' / 'spam'}", f"ham={DEMO / 'train' / 'ham'}")
    assert result.exit_code == 0, result.stderr
    return model


def test_a_non_ascii_label_is_an_encoded_word_and_the_message_goes_out(accented_model):
    result = run("filter", "-m", accented_model, input=MESSAGE)
    assert result.exit_code == 0, result.stderr
    parsed = email.message_from_bytes(result.stdout_bytes)
    label = str(email.header.make_header(email.header.decode_header(parsed["X-Nbtext-Class"])))
    assert label == "spæm" and result.stdout_bytes.isascii()
    assert result.stdout_bytes.endswith(MESSAGE.split(b"\n\n", 1)[1])
    assert run("predict", "-m", accented_model, input=MESSAGE).stdout == "spæm\n"  # readable where it is text


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=200), st.sampled_from([b"\n", b"\r\n"]))
def test_any_label_becomes_a_header_value_that_decodes_back_to_it(label, newline):
    value = header_value(label, newline)
    assert value.isascii()
    for line in value.split(newline):  # folded lines only: no bare CR or LF, and short
        assert b"\r" not in line and b"\n" not in line and len(line) <= (998 if label.isascii() else 78)
    if label.isascii() and label.isprintable():
        assert value.replace(newline + b" ", b" ") == label.encode()  # folded at spaces, nothing else
    else:
        unfolded = value.replace(newline + b" ", b" ").decode()
        assert str(email.header.make_header(email.header.decode_header(unfolded))) == label


def test_evidence_with_words_that_are_not_ascii_decodes_to_them(accented_model):
    """filter --explain: `größe` in X-Nbtext-Evidence as an encoded word (it was written
    `gr\\xf6\\xdfe`, which no mail tool decodes back), and long evidence folded."""
    from nbtext.cli.mailfilter import verdict_fields

    fields = verdict_fields("spam", 0.9, [("größe", 3.26), ("w" * 3000, 1.0)] + [(f"t{i}", 0.5) for i in range(40)])
    head = with_headers(b"Subject: x\n\nbody\n", fields)
    parsed = email.message_from_bytes(head)
    evidence = str(email.header.make_header(email.header.decode_header(parsed["X-Nbtext-Evidence"])))
    assert evidence.startswith("größe:+3.26; " + "w" * 100 + ":+1.00; t0:+0.50")
    assert max(len(line) for line in head.split(b"\n")) <= 998


@needs_executable
def test_a_reader_that_closes_early_is_exit_75(demo_model):
    """`nbtext filter < big | head -c 10`: Python's writer returned a short count and the
    rest of the message was lost with exit status 0."""
    big = MESSAGE + b"x" * 400_000 + b"\n"
    process = subprocess.Popen([NBTEXT, "filter", "-m", demo_model], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdin.write(big)
    process.stdin.close()
    process.stdout.read(10)
    process.stdout.close()  # the reader is gone
    assert process.wait(timeout=60) == 75
    with process.stderr:
        assert process.stderr.read().decode() == "Error: cannot write the message: Broken pipe\n"


@needs_executable
@pytest.mark.parametrize("command, status", [
    ('"$NBTEXT" filter -m "$MODEL" < "$MESSAGE"', 75),
    ('"$NBTEXT" predict -m "$MODEL" < "$MESSAGE"', 1),
    ('"$NBTEXT" predict -m "$MODEL" "$MESSAGE"', 1),
    ('"$NBTEXT" predict -m "$MODEL" --is spam -v < "$MESSAGE"', 3),
    ('"$NBTEXT" info -m "$MODEL"', 1),
    ('"$NBTEXT" eval -m "$MODEL" "$TEST/spam" "$TEST/ham"', 1),
])
def test_a_closed_stdout_is_one_line_and_a_failing_status(demo_model, tmp_path, command, status):
    message = tmp_path / "message"
    message.write_bytes(MESSAGE)
    code, _, stderr = shell(command + " >&-", MODEL=demo_model, MESSAGE=message, TEST=DEMO / "test")
    assert code == status, stderr
    assert stderr.count("\n") == 1 and "standard output is closed" in stderr and "Traceback" not in stderr


@pytest.mark.parametrize("closed", [">&-", "<&- >&-", "2>&- >&-"])
def test_a_closed_stdout_never_lets_a_file_take_its_place(tmp_path, closed):
    """With fd 1 closed, the next file opened would get descriptor 1, and whatever nbtext
    then wrote to stdout would go into it (a model, a temporary file). The executable's first
    step holds every closed standard descriptor on /dev/null: the file opened next gets 3."""
    code = ("import os, sys; from nbtext.report.output import guard_descriptors; guard_descriptors(); "
            "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT); os.write(fd, str(fd).encode())")
    opened = tmp_path / "opened"
    code_status, _, stderr = shell(f'"{sys.executable}" -c "$CODE" "$OPENED" {closed}', CODE=code, OPENED=opened)
    assert code_status == 0, stderr
    assert opened.read_text() == "3"
    unguarded = code.replace("guard_descriptors(); ", "")
    shell(f'"{sys.executable}" -c "$CODE" "$OPENED" >&-', CODE=unguarded, OPENED=tmp_path / "unguarded")
    assert (tmp_path / "unguarded").read_text() == "1"  # what it guards against


def _bad_models(folder, demo_model):
    """Model files a filter may meet: missing, empty, text, a pickle, truncated, a flipped
    payload byte, a folder, another format version."""
    import json
    import struct

    data = demo_model.read_bytes()
    _, length = struct.unpack_from("<IQ", data, 13)
    flip = 29 + length + json.loads(data[29:29 + length])["payload_bytes"] - 40  # in the arrays a filter reads
    cases = {"empty": b"", "text": b"hello\n", "pickle": b"\x80\x04K\x01.", "truncated": data[: len(data) // 2],
             "flipped": data[:flip] + bytes([data[flip] ^ 0xFF]) + data[flip + 1:],
             "newer": data[:13] + (99).to_bytes(4, "little") + data[17:]}
    paths = {}
    for name, content in cases.items():
        paths[name] = folder / f"{name}.model"
        paths[name].write_bytes(content)
    paths["missing"] = folder / "missing.model"
    paths["folder"] = folder
    return paths


@needs_executable
def test_a_bad_model_passes_the_message_on_tagged_error_with_status_1(demo_model, tmp_path):
    for name, path in _bad_models(tmp_path, demo_model).items():
        result = subprocess.run([NBTEXT, "filter", "-m", path], input=MESSAGE, capture_output=True, timeout=60)
        assert (name, result.returncode) == (name, 1), result.stderr
        assert result.stdout == ERROR_TAGGED, name
        assert result.stderr.decode().count("\n") == 1 and b"Traceback" not in result.stderr, name


@needs_executable
@pytest.mark.parametrize("args", [["--unsure-below", "2"], ["extra-argument"], ["--bogus"], ["--explain", "-1"],
                                  ["--max-bytes", "0"], ["-m"]])
def test_a_command_line_filter_cannot_take_passes_the_message_on_tagged_error(demo_model, args):
    """A usage error in a delivery path is a configuration error, as a bad model is: the
    message goes out tagged error, status 1, one line on stderr (it was exit 2, nothing out)."""
    result = subprocess.run([NBTEXT, "filter", "-m", demo_model, *args], input=MESSAGE, capture_output=True,
                            timeout=60)
    assert result.returncode == 1 and result.stdout == ERROR_TAGGED
    assert result.stderr.decode().count("\n") == 1 and result.stderr.startswith(b"Error: ")


@pytest.mark.parametrize("label", ["ham\nX-Spam-Flag: NO", "ham\r", "a\x00b", "tab\there", "\x1b[2J"])
def test_a_label_with_a_control_character_is_refused_before_reading(tmp_path, label):
    """Labels are data: one with a line break would forge a header through filter."""
    if "\x00" not in label:  # (no command line argument holds a NUL)
        result = run("train", "-o", tmp_path / "m", f"{label}={DEMO / 'train' / 'spam'}", DEMO / "train" / "ham")
        assert result.exit_code == 1 and "holds a control character" in result.stderr
        assert result.stderr.count("\n") == 1 and not (tmp_path / "m").exists()
    import csv

    table = tmp_path / "t.csv"  # a quoted CSV field holds any character
    with open(table, "w", newline="") as f:
        csv.writer(f).writerows([[label + "x", "free prize"], ["ham", "lunch meeting"]])  # (cells are stripped)
    result = run("train", "-o", tmp_path / "m", "--min-count", "1", "--table", table)
    assert result.exit_code == 1 and "control character" in result.stderr, result.stderr


@needs_executable
@pytest.mark.parametrize("command, status", [
    ("predict -m $MODEL", 1), ("predict -m $MODEL -", 1), ("predict -m $MODEL --lines", 1),
    ("predict -m $MODEL --is spam", 3), ("predict -m $MODEL --files-from -", 1), ("train -o $TMP/x --fasttext -", 1),
    ("train --update -m $TMP/copy spam=-", 1), ("forget -m $TMP/copy -", 1), ("eval -m $MODEL --table -", 1),
    ("filter -m $MODEL", 75),
])
def test_a_closed_stdin_is_one_line_never_a_traceback(demo_model, tmp_path, command, status):
    """Every reader of `-` opens stdin one way (reading.documents.stdin_bytes): a process
    started with it closed says so in one line (it was a traceback: sys.stdin is None)."""
    import shutil

    shutil.copy(demo_model, tmp_path / "copy")
    code, out, err = shell(f"$NBTEXT {command} <&-", MODEL=demo_model, TMP=tmp_path)
    assert (code, out) == (status, b"")
    assert err == "Error: stdin is closed: there is no input to read (give a PATH, or open stdin)\n"


def test_a_message_of_cr_line_ends_goes_out_unchanged_after_the_verdict():
    """Lines ended by CR alone have no header end to find: the verdict went after the whole
    message with a line feed put into it; now it is a header block in front, and every byte
    of the message follows unchanged."""
    message = b"Subject: x\rFrom: y\r\rbody\r"
    tagged = with_headers(message, [("X-Nbtext-Class", "ham")])
    assert tagged == b"X-Nbtext-Class: ham\n\n" + message
