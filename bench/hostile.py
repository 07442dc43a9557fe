"""Hostile input, measured: each shape of tests/test_hostile.py timed at 100 KB and 400 KB
(linear gives a ratio of about 4, quadratic 16), the peak memory of `nbtext predict`
on a few large hostile messages, over its start-up, and the memory traced while each shape of
tests/test_hostile_patterns.py is read by the mail lexer with every header
(that alone with --patterns).

    .venv/bin/python bench/hostile.py [--patterns]
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_hostile import MAIL_LEXER, SHAPES, message, ratio, repeat, seconds
from test_hostile_patterns import SHAPES as PATTERN_SHAPES
from test_hostile_patterns import peak

NBTEXT = str(Path(sys.executable).with_name("nbtext"))


def peak_mib(model, data, folder):
    path = Path(folder) / "message.eml"
    path.write_bytes(data)
    process = subprocess.Popen(
        [NBTEXT, "predict", "-m", model, str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024


def main():
    print(f"{'shape':32s} {'100 KB':>9s} {'400 KB':>9s} {'ratio':>6s}")
    for name, make in SHAPES.items():
        small, large = make(100_000), make(400_000)
        seconds(small, 1)
        print(
            f"{name:32s} {seconds(small) * 1000:7.1f}ms {seconds(large) * 1000:7.1f}ms {ratio(small, large):6.1f}",
            flush=True,
        )
    with tempfile.TemporaryDirectory() as folder:
        model = str(Path(folder) / "demo.model")
        train = ROOT / "corpora" / "mail" / "train"
        subprocess.run(
            [NBTEXT, "train", "-o", model, str(train / "spam"), str(train / "ham")], check=True, capture_output=True
        )
        base = peak_mib(model, b"Subject: hi\n\nhello", folder)
        print(f"\npeak memory of nbtext predict, over its start-up ({base:.1f} MiB)")
        for name, data in (
            ("10 MB of 'word '", message(repeat(b"word ", 10_000_000), b"text/plain")),
            ("14 MB of 'http://' (read: 10 MB)", message(repeat(b"http://", 14_000_000), b"text/plain")),
            (
                "5 MB of Content-Type parameters",
                b"From: a@example.com\nContent-Type: text/plain" + repeat(b"; a=b", 5_000_000) + b"\n\nhi",
            ),
            ("10 MB of '<!-- x '", message(repeat(b"<!-- x ", 10_000_000))),
        ):
            extra = peak_mib(model, data, folder) - base
            print(
                f"  {name:36s} {extra:7.1f} MiB = {extra / (min(len(data), 10_000_000) / 2**20):5.1f} x the bytes read"
            )

    pattern_memory()


def pattern_memory(size=1_000_000):
    """Memory traced while the mail lexer (every header) reads each shape of
    tests/test_hostile_patterns.py, in bytes a byte of the message."""
    plain = peak(MAIL_LEXER, message(repeat(b"free prize lunch ", size), b"text/plain")) / size
    print(f"\nmemory traced while the mail lexer reads {size // 1000} KB (a plain message: {plain:.1f} bytes a byte)")
    for name, make in PATTERN_SHAPES.items():
        data = make(size)
        print(f"  {name:42s} {peak(MAIL_LEXER, data) / len(data):6.1f} bytes a byte", flush=True)


if __name__ == "__main__":
    pattern_memory() if sys.argv[1:] == ["--patterns"] else main()
