"""nbtext's benchmark: speed and memory as ratios against peers measured in the same run.

    make bench                       # or: .venv/bin/python bench/bench.py [--reps N]
    .venv/bin/python bench/bench.py --training     # the training rows alone (a few minutes)

Contenders run as whole processes, interleaved (A B C A B C ...) over the repetitions, so
a noisy machine slows them alike; medians and min-max are reported. The peers:
scikit-learn doing the same job (bench/sklearn_job.py), the Python floor, a script that
only reads, decodes, lowercases and tokenizes every file (bench/floor.py), and the Python
reference of training, which also counts tokens into a class table (bench/reference.py);
for `nbtext serve`, bogofilter and `nbtext filter` given the same message (bench/serve.py).
Writes the table to stdout and everything to bench/results/latest.json.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from accuracy import GENERAL  # bench/accuracy.py: the general defaults, for classes spam and ham too

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
WORK = ROOT / "build" / "bench"
BIN = Path(sys.executable).parent
PYTHON = str(BIN / "python")
NBTEXT = str(BIN / "nbtext")
CORPORA = ("20news", "spamassassin", "sms")
# the spam preset before its character n-grams (words and word pairs, cap 150, margin 40, band 0.97), typed
FORMER_PRESET = (
    *("--preset", "general", "--features", "binary", "--learn", "tone", "--tone-margin", "40", "--min-count", "1"),
    *("--alpha", "1", "--ngrams", "2", "--max-evidence", "150", "--calibration", "none", "--unsure-below", "0.97"),
    *("--headers", "subject,from,to,content-type,received,x-mailer,return-path,reply-to,message-id"),
)


def run(command, stdin=None, ok=(0,)):
    """(seconds, peak RSS in MiB, stdout, stderr) of one command as a whole process (an exit
    status not in `ok` stops the bench)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        source = open(stdin, "rb") if stdin else subprocess.DEVNULL
        started = time.perf_counter()
        process = subprocess.Popen(command, stdin=source, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if stdin:
            source.close()
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode not in ok:
        sys.exit(f"bench: {' '.join(command)} failed ({process.returncode}):\n{stderr.decode(errors='replace')}")
    return seconds, usage.ru_maxrss / 1024, stdout, stderr


def interleaved(contenders, reps):
    """{name: [seconds...]} and {name: [peak MiB...]}, running A B C A B C ..."""
    times = {name: [] for name in contenders}
    memory = {name: [] for name in contenders}
    for _ in range(reps):
        for name, (command, stdin) in contenders.items():
            seconds, mib, _, _ = run(command, stdin)
            times[name].append(seconds)
            memory[name].append(mib)
    return times, memory


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "all": values}


def class_folders(corpus, split):
    return sorted(str(p) for p in (DATA / corpus / split).iterdir() if p.is_dir())


def count_files(folder):
    return sum(len(files) for _, _, files in os.walk(folder))


def replicated(corpus, times):
    """data/CORPUS/train replicated `times` times (hard links), as build/bench/CORPUS-xN."""
    target = WORK / f"{corpus}-x{times}"
    stamp = target / ".done"
    if stamp.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    for folder in class_folders(corpus, "train"):
        out = target / Path(folder).name
        out.mkdir(parents=True)
        for name in os.listdir(folder):
            for k in range(times):
                os.link(os.path.join(folder, name), out / f"{name}-{k}")
    stamp.touch()
    return target


def nbtext_accuracy(model, corpus):
    _, _, out, _ = run([NBTEXT, "eval", "-m", str(model), "--format", "json", *class_folders(corpus, "test")])
    return json.loads(out)["accuracy"]


def sklearn_accuracy(model, corpus):
    _, _, _, err = run(
        [PYTHON, str(ROOT / "bench" / "sklearn_job.py"), "predict", str(model), str(DATA / corpus / "test")]
    )
    return float(err.decode().split()[-1])


def bench_corpus(corpus, reps, results):
    bench_training(corpus, reps, results)
    bench_prediction(corpus, reps, results)


def bench_training(corpus, reps, results):
    model, sk_model = WORK / f"{corpus}.model", WORK / f"{corpus}.sklearn"
    # the general defaults (a model of classes spam and ham has the spam preset's by default: a row of its own)
    folders = class_folders(corpus, "train")
    train = [*GENERAL, *folders]
    spam_preset = (
        {
            "nbtext, the spam preset": ([NBTEXT, "train", "-o", str(WORK / "preset.model"), *folders], None),
            # the former preset (docs/choices.md#the-spam-preset): words and word pairs, no character n-grams
            "nbtext, the former preset": (
                [NBTEXT, "train", *FORMER_PRESET, "-o", str(WORK / "former-preset.model"), *folders],
                None,
            ),
        }
        if corpus == "spamassassin"
        else {}
    )
    times, memory = interleaved(
        {
            "nbtext": ([NBTEXT, "train", "-o", str(model), *train], None),
            "nbtext -j 1": ([NBTEXT, "train", "-j", "1", "-o", str(model), *train], None),
            **spam_preset,
            # like for like with the peer, which does not calibrate (a scratch file: `model` stays the default's)
            "nbtext, no calibration": (
                [NBTEXT, "train", "--calibration", "none", "-o", str(WORK / "raw.model"), *train],
                None,
            ),
            # like for like with the floor, which neither parses mail nor calibrates
            "nbtext -j 1, floor's job": (
                [
                    NBTEXT,
                    "train",
                    "-j",
                    "1",
                    "--input",
                    "text",
                    "--calibration",
                    "none",
                    "-o",
                    str(WORK / "raw.model"),
                    *train,
                ],
                None,
            ),
            "nbtext, floor's job": (
                [NBTEXT, "train", "--input", "text", "--calibration", "none", "-o", str(WORK / "raw.model"), *train],
                None,
            ),
            "sklearn": (
                [PYTHON, str(ROOT / "bench" / "sklearn_job.py"), "train", str(DATA / corpus / "train"), str(sk_model)],
                None,
            ),
            "floor": ([PYTHON, str(ROOT / "bench" / "floor.py"), str(DATA / corpus / "train")], None),
            # tokenize and count in plain Python, one bincount into the class table (issue 27)
            "reference": ([PYTHON, str(ROOT / "bench" / "reference.py"), *folders], None),
        },
        reps,
    )
    results[f"train/{corpus}"] = {name: summary(v) for name, v in times.items()}
    results[f"train-memory/{corpus}"] = {name: summary(v) for name, v in memory.items()}


def bench_prediction(corpus, reps, results):
    model, sk_model = WORK / f"{corpus}.model", WORK / f"{corpus}.sklearn"
    test = DATA / corpus / "test"
    n_test = count_files(test)
    times, _ = interleaved(
        {
            "nbtext": ([NBTEXT, "predict", "-m", str(model), str(test)], None),  # -j auto
            "nbtext -j 1": ([NBTEXT, "predict", "-j", "1", "-m", str(model), str(test)], None),
            "nbtext -j 2": ([NBTEXT, "predict", "-j", "2", "-m", str(model), str(test)], None),
            "sklearn": ([PYTHON, str(ROOT / "bench" / "sklearn_job.py"), "predict", str(sk_model), str(test)], None),
            "floor": ([PYTHON, str(ROOT / "bench" / "floor.py"), str(test)], None),
        },
        reps,
    )
    results[f"predict/{corpus}"] = {name: summary(v) for name, v in times.items()}
    results[f"predict/{corpus}"]["documents"] = n_test
    results[f"accuracy/{corpus}"] = {
        "nbtext": nbtext_accuracy(model, corpus),
        "sklearn": sklearn_accuracy(sk_model, corpus),
    }


def bench_latency(reps, results):
    model = WORK / "spamassassin.model"
    message = sorted((DATA / "spamassassin" / "test" / "spam").iterdir())[0]
    # the spam preset's model crafted with a token of 20 MB, and a message of ~9,000 distinct tokens
    long_token, many = WORK / "preset-long-token.model", WORK / "many-tokens.eml"  # (of this run's preset.model)
    subprocess.run(
        [PYTHON, str(ROOT / "bench" / "long_token.py"), str(WORK / "preset.model"), str(long_token), str(many)],
        check=True,
    )
    times, _ = interleaved(
        {
            "nbtext filter < many tokens, the spam preset's model": (
                [NBTEXT, "filter", "-m", str(WORK / "preset.model")],
                str(many),
            ),
            "nbtext filter < many tokens, the preset's model with a 20 MB token": (
                [NBTEXT, "filter", "-m", str(long_token)],
                str(many),
            ),
            "nbtext predict < message": ([NBTEXT, "predict", "-m", str(model)], str(message)),
            "nbtext predict MESSAGE": ([NBTEXT, "predict", "-m", str(model), str(message)], None),
            "nbtext filter < message": ([NBTEXT, "filter", "-m", str(model)], str(message)),
            # the spam preset's model and the former preset's, trained by bench_training
            "nbtext filter < message, the spam preset's model": (
                [NBTEXT, "filter", "-m", str(WORK / "preset.model")],
                str(message),
            ),
            "nbtext filter < message, the former preset's model": (
                [NBTEXT, "filter", "-m", str(WORK / "former-preset.model")],
                str(message),
            ),
            "one-message floor": ([PYTHON, str(ROOT / "bench" / "message_floor.py"), str(model)], str(message)),
            "python -c 'import numpy'": ([PYTHON, "-c", "import numpy"], None),
            "python -c pass": ([PYTHON, "-c", "pass"], None),
        },
        reps,
    )
    results["latency"] = {name: summary(v) for name, v in times.items()}


def distinct_copies(corpus, times):
    """data/CORPUS (train and test) `times` times as build/bench/CORPUS-distinct-xN, each
    copy's words given a suffix of their own (Latin letters, so they stay tokens): a corpus
    and a vocabulary `times` times as large, as a mail server's model of five corpora."""
    import re

    target = WORK / f"{corpus}-distinct-x{times}"
    stamp = target / ".done"
    if stamp.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    for split in ("train", "test"):
        for folder in class_folders(corpus, split):
            out = target / Path(folder).name
            out.mkdir(parents=True, exist_ok=True)
            for name in os.listdir(folder):
                data = Path(folder, name).read_bytes()
                for k in range(times):
                    suffix = b"q" + bytes([ord("a") + k])
                    (out / f"{split}-{name}-{k}").write_bytes(
                        data if k == 0 else re.sub(rb"([A-Za-z]{2,})", rb"\1" + suffix, data)
                    )
    stamp.touch()
    return target


def bench_learning(reps, results):
    """issue 24: one message learned (train --update) and forgotten, on the SpamAssassin
    model (the general defaults), on one five times larger and on the spam preset's (presence,
    word pairs, nine headers: a model of classes spam and ham by default), against python -c
    pass; a fresh copy of the model for each learner, so its pending section never reaches the
    fold."""
    big = distinct_copies("spamassassin", 5)
    models = {
        "spamassassin": WORK / "spamassassin.model",
        "five times larger": WORK / "spamassassin-x5.model",
        "spam preset": WORK / "spamassassin-preset.model",
    }
    big_train = sorted(str(p) for p in big.iterdir() if p.is_dir())
    run([NBTEXT, "train", *GENERAL, "-o", str(models["five times larger"]), *big_train])
    run([NBTEXT, "train", "-o", str(models["spam preset"]), *class_folders("spamassassin", "train")])  # (its defaults)
    message = sorted((DATA / "spamassassin" / "test" / "spam").iterdir())[1]
    contenders = {"python -c pass": ([PYTHON, "-c", "pass"], None)}
    for name, model in models.items():
        copy = WORK / f"learner-{model.name}"
        shutil.copy(model, copy)
        contenders[f"learn one: {name}"] = ([NBTEXT, "train", "--update", "-m", str(copy), f"ham={message}"], None)
        contenders[f"forget one: {name}"] = ([NBTEXT, "forget", "-m", str(copy), str(message)], None)
    times, _ = interleaved(contenders, reps)  # learn, forget, learn ...: the section stays short
    results["learning"] = {name: summary(v) for name, v in times.items()}
    folders = class_folders("spamassassin", "train") + class_folders("spamassassin", "test")
    times, _ = interleaved(
        {  # issue 24 §3: the spam track's protocol against scoring the same messages at once
            "eval --online (learn errors)": ([NBTEXT, "eval", "--online", *GENERAL, *folders], None),
            "eval of a model": ([NBTEXT, "eval", "-m", str(models["spamassassin"]), *folders], None),
        },
        max(2, reps // 4),
    )
    results["online"] = {name: summary(v) for name, v in times.items()}


def bench_scaling(reps, results):
    x1, x8 = DATA / "20news" / "train", replicated("20news", 8)
    classes = lambda folder: sorted(str(p) for p in Path(folder).iterdir() if p.is_dir())
    model = str(WORK / "scaling.model")
    times, memory = interleaved(
        {
            "x1 -j 1": ([NBTEXT, "train", "-j", "1", "-o", model, *classes(x1)], None),
            "x8 -j 1": ([NBTEXT, "train", "-j", "1", "-o", model, *classes(x8)], None),
            "x8 -j 2": ([NBTEXT, "train", "-j", "2", "-o", model, *classes(x8)], None),
        },
        reps,
    )
    results["scaling"] = {name: summary(v) for name, v in times.items()}
    results["scaling-memory"] = {name: summary(v) for name, v in memory.items()}


def large_messages(n):
    """build/bench/large-N: N mails (spam/ and ham/) of ~4 MB each, a short text and a 3 MB
    attachment (issue 49's ordinary mail with an attachment), made once."""
    import base64
    import random

    target = WORK / f"large-{n}"
    if (target / "done").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    attachment = base64.encodebytes(random.Random(49).randbytes(3_000_000)).decode()
    words = ["invoice", "meeting", "report", "attached", "please", "review", "offer", "cheap", "quarter", "budget"]
    for i in range(n):
        label = "spam" if i % 2 else "ham"
        (target / label).mkdir(parents=True, exist_ok=True)
        text = " ".join(random.Random(i).choices(words, k=400))
        (target / label / f"{i}.eml").write_text(
            f"From: a{i}@example.com\nSubject: {label} {i}\nMIME-Version: 1.0\n"
            "Content-Type: multipart/mixed; boundary=XX\n\n--XX\nContent-Type: text/plain\n\n"
            f"{text}\n--XX\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\n"
            f"{attachment}--XX--\n"
        )
    (target / "done").touch()
    return target


def bench_large_messages(reps, results):
    """Peak memory of predict and train over 10 and 40 messages of ~4 MB: a batch is bounded
    by its bytes (nbtext.reading.documents.BATCH_BYTES), so the peak stays flat."""
    contenders = {}
    for n in (10, 40):
        folders = [str(large_messages(n) / label) for label in ("ham", "spam")]
        model = str(WORK / f"large-{n}.model")
        contenders[f"train {n} -j 1"] = ([NBTEXT, "train", "-q", "-j", "1", "-o", model, *folders], None)
        contenders[f"predict {n} -j 1"] = ([NBTEXT, "predict", "-j", "1", "-m", model, *folders], None)
    times, memory = interleaved(contenders, reps)
    results["large"] = {name: summary(v) for name, v in times.items()}
    results["large-memory"] = {name: summary(v) for name, v in memory.items()}


def stream_file(lines):
    """build/bench/lines-N.txt: the SMS corpus's messages, one per line, cycled to N lines."""
    path = WORK / f"lines-{lines}.txt"
    if not path.exists():
        texts = [p.read_text(encoding="utf-8").replace("\n", " ") for p in sorted((DATA / "sms").glob("*/*/*"))]
        with open(path, "w", encoding="utf-8") as out:
            for i in range(lines):
                out.write(texts[i % len(texts)] + "\n")
    return path


def bench_stream(results):
    """A million lines through `nbtext predict --lines`: memory must not grow with the input."""
    model = WORK / "sms.model"
    results["stream"], results["stream-memory"] = {}, {}
    for lines in (100_000, 1_000_000):
        seconds, mib, _, _ = run([NBTEXT, "predict", "-m", str(model), "--lines"], str(stream_file(lines)))
        results["stream"][f"{lines:,} lines"] = summary([seconds])
        results["stream-memory"][f"{lines:,} lines"] = summary([mib])


def machine():
    """The machine's facts, read in a child process: the bench process itself imports no
    numpy, so the children it forks (and their peak RSS) start small."""
    probe = (
        "import json, os, platform, numpy, scipy, sklearn\n"
        "cpu = platform.processor() or platform.machine()\n"
        "try:\n"
        "    cpu = next(l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name'))\n"
        "except (OSError, StopIteration):\n"
        "    pass\n"
        "print(json.dumps({'cpu': cpu, 'cores': os.cpu_count(), 'python': platform.python_version(),\n"
        "    'numpy': numpy.__version__, 'scipy': scipy.__version__, 'scikit-learn': sklearn.__version__,\n"
        "    'platform': platform.platform()}))\n"
    )
    return json.loads(subprocess.run([PYTHON, "-c", probe], capture_output=True, check=True).stdout)


def ratio(a, b):
    return a / b if b else float("nan")


def training_targets(r):
    """Issue 27's rows: nbtext's training against the Python reference (bench/reference.py)."""
    rows = []
    med = lambda key, name: r[key][name]["median"]
    for corpus in ("20news", "spamassassin"):
        reference = lambda name: ratio(med(f"train/{corpus}", name), med(f"train/{corpus}", "reference"))
        for name, target in (("nbtext -j 1, floor's job", 1.1), ("nbtext -j 1", 1.3), ("nbtext", 0.75)):
            what = {
                "nbtext -j 1, floor's job": "-j 1, text, no calibration",
                "nbtext -j 1": "-j 1",
                "nbtext": "default workers",
            }[name]
            rows.append(
                (f"train {corpus} ({what}) / reference", reference(name), f"<= {target}", reference(name) <= target)
            )
        rows.append(
            (
                "  (the reference / the floor)",
                ratio(med(f"train/{corpus}", "reference"), med(f"train/{corpus}", "floor")),
                "report",
                True,
            )
        )
    return rows + tone_memory_targets(r)


def tone_memory_targets(r):
    """Issue 52's rows: the peak RSS of a training by the spam preset's TONE pass, which holds
    every message's tokens until its pass has run, against the general defaults' training of
    the same messages, which holds a batch at a time (default workers both)."""
    memory = r["train-memory/spamassassin"]
    rows = []
    for name, target in (("nbtext, the spam preset", 4.5), ("nbtext, the former preset", 2.0)):
        held = ratio(memory[name]["median"], memory["nbtext"]["median"])
        what = name.removeprefix("nbtext, ")
        rows.append(
            (f"peak RSS train spamassassin: {what} / the general defaults", held, f"<= {target}", held <= target)
        )
    return rows


def targets(r):
    """(description, measured ratio, target, met?) for every target of the issue."""
    rows = training_targets(r)
    med = lambda key, name: r[key][name]["median"]
    for corpus in ("20news", "spamassassin"):
        speedup = ratio(med(f"train/{corpus}", "sklearn"), med(f"train/{corpus}", "nbtext"))
        rows.append((f"train {corpus}: sklearn time / nbtext time", speedup, ">= 2", speedup >= 2))
        if "nbtext, the spam preset" in r[f"train/{corpus}"]:  # (a model of spam and ham by default)
            preset = ratio(med(f"train/{corpus}", "nbtext, the spam preset"), med(f"train/{corpus}", "nbtext"))
            rows.append(("  (the spam preset's time / the general defaults')", preset, "report", True))
            former = ratio(med(f"train/{corpus}", "nbtext, the former preset"), med(f"train/{corpus}", "nbtext"))
            rows.append(("  (the former preset's, words alone / the general defaults')", former, "report", True))
        single = ratio(med(f"train/{corpus}", "sklearn"), med(f"train/{corpus}", "nbtext -j 1"))
        rows.append(("  (the same with nbtext -j 1, one process)", single, ">= 2", single >= 2))
        raw = ratio(med(f"train/{corpus}", "sklearn"), med(f"train/{corpus}", "nbtext, no calibration"))
        rows.append(("  (the same with --calibration none, as the peer)", raw, "report", True))
        # against the floor (issue 12's targets, blocked: a dict look-up a token costs 70% of the
        # floor's regex; issue 27 measures against the reference above instead)
        floor = ratio(med(f"train/{corpus}", "nbtext -j 1"), med(f"train/{corpus}", "floor"))
        rows.append((f"  (train {corpus}: nbtext -j 1 time / floor time)", floor, "report", True))
        floor = ratio(med(f"train/{corpus}", "nbtext"), med(f"train/{corpus}", "floor"))
        rows.append((f"  (train {corpus}: nbtext time / floor time)", floor, "report", True))
        for name in ("nbtext -j 1", "nbtext"):  # the same job as the floor: --input text --calibration none
            floor = ratio(med(f"train/{corpus}", f"{name}, floor's job"), med(f"train/{corpus}", "floor"))
            rows.append((f"  ({name}, text and no calibration, as the floor)", floor, "report", True))
    for corpus in CORPORA:
        one = ratio(med(f"predict/{corpus}", "sklearn"), med(f"predict/{corpus}", "nbtext -j 1"))
        two = ratio(med(f"predict/{corpus}", "sklearn"), med(f"predict/{corpus}", "nbtext -j 2"))
        auto = ratio(med(f"predict/{corpus}", "sklearn"), med(f"predict/{corpus}", "nbtext"))
        rows.append((f"predict {corpus} -j 1: throughput / sklearn's", one, ">= 1.5", one >= 1.5))
        rows.append((f"predict {corpus} -j 2: throughput / sklearn's", two, ">= 2.5", two >= 2.5))
        rows.append(("  (the default, -j auto)", auto, "report", True))
    latency = ratio(med("latency", "nbtext predict < message"), med("latency", "python -c 'import numpy'"))
    rows.append(("one message: nbtext predict / python -c 'import numpy'", latency, "<= 0.6", latency <= 0.6))
    bare = lambda name: ratio(med("latency", name), med("latency", "python -c pass"))  # issue 24
    for name in ("nbtext filter < message", "nbtext predict < message"):
        rows.append((f"one message: {name} / python -c pass", bare(name), "<= 1.5", bare(name) <= 1.5))
    rows.append(("  (the floor: read the model, tokenize, no scoring)", bare("one-message floor"), "report", True))
    general = med("latency", "nbtext filter < message")  # (the general defaults' model)
    preset = ratio(med("latency", "nbtext filter < message, the spam preset's model"), general)
    rows.append(
        ("one message: filter with the spam preset's model / the general defaults'", preset, "<= 1.15", preset <= 1.15)
    )
    former = ratio(med("latency", "nbtext filter < message, the former preset's model"), general)
    rows.append(("  (with the former preset's model, words alone / the general defaults')", former, "report", True))
    crafted = ratio(
        med("latency", "nbtext filter < many tokens, the preset's model with a 20 MB token"),
        med("latency", "nbtext filter < many tokens, the spam preset's model"),
    )
    rows.append(
        ("one message of 9,000 tokens: a model with a 20 MB token / without", crafted, "<= 1.5", crafted <= 1.5)
    )
    by_name = ratio(med("latency", "nbtext predict MESSAGE"), med("latency", "nbtext predict < message"))
    rows.append(("one message: nbtext predict FILE / predict < FILE", by_name, "<= 1.05", by_name <= 1.05))
    learning = lambda name: ratio(med("learning", name), med("learning", "python -c pass"))  # issue 24
    for what in ("learn one", "forget one"):
        small, big = learning(f"{what}: spamassassin"), learning(f"{what}: five times larger")
        rows.append((f"{what} message (SpamAssassin model) / python -c pass", small, "<= 4", small <= 4))
        rows.append(
            ("  the same on a model five times larger / on SpamAssassin's", big / small, "<= 1.3", big / small <= 1.3)
        )
        preset = learning(f"{what}: spam preset") / small  # (through the pending section, as a model of counts)
        rows.append(("  the same on the spam preset's model / on SpamAssassin's", preset, "<= 1.3", preset <= 1.3))
    online = ratio(med("online", "eval --online (learn errors)"), med("online", "eval of a model"))
    rows.append(("eval --online of SpamAssassin / eval of a model on the same messages", online, "<= 3", online <= 3))
    memory = ratio(r["scaling-memory"]["x8 -j 1"]["median"], r["scaling-memory"]["x1 -j 1"]["median"])
    rows.append(("peak RSS training 20news x8 / x1", memory, "<= 1.5", memory <= 1.5))
    stream = ratio(r["stream-memory"]["1,000,000 lines"]["median"], r["stream-memory"]["100,000 lines"]["median"])
    rows.append(("peak RSS of predict --lines, 1,000,000 / 100,000 lines", stream, "<= 1.1", stream <= 1.1))
    for command in ("predict", "train"):  # issue 49: a batch is bounded by its bytes
        large = ratio(
            r["large-memory"][f"{command} 40 -j 1"]["median"], r["large-memory"][f"{command} 10 -j 1"]["median"]
        )
        rows.append((f"peak RSS of {command}, 40 / 10 messages of 4 MB", large, "<= 1.15", large <= 1.15))
    jobs = ratio(med("scaling", "x8 -j 1"), med("scaling", "x8 -j 2"))
    rows.append(("train 20news x8: -j 1 time / -j 2 time", jobs, ">= 1.6", jobs >= 1.6))
    return rows


def report(r):
    lines = [
        f"machine: {r['machine']['cpu']}, {r['machine']['cores']} cores, Python {r['machine']['python']}, "
        f"numpy {r['machine']['numpy']}, scipy {r['machine']['scipy']}, scikit-learn {r['machine']['scikit-learn']}",
        f"repetitions: {r['reps']} (interleaved); seconds as median [min-max]",
        "",
    ]
    for key, value in r.items():
        if key in ("machine", "reps", "targets", "notes") or key.startswith("accuracy"):
            continue
        unit = "MiB" if "memory" in key else "bytes" if "shipped" in key else "/s" if "rate" in key else "s"
        lines.append(key)
        for name, s in value.items():
            if isinstance(s, dict):
                extra = ""
                if key.startswith("predict/") and unit == "s":
                    extra = f"  ({value['documents'] / s['median']:,.0f} documents/s)"
                lines.append(f"  {name:28s} {s['median']:8.3f} {unit} [{s['min']:.3f}-{s['max']:.3f}]{extra}")
    if "accuracy/20news" in r:
        lines.append("")
        lines.append("accuracy (test split)")
        for corpus in CORPORA:
            a = r[f"accuracy/{corpus}"]
            lines.append(f"  {corpus:14s} nbtext {a['nbtext']:.4f}   sklearn {a['sklearn']:.4f}")
    lines.append("")
    lines.append("targets")
    for description, value, target, met in r["targets"]:
        lines.append(f"  {'met   ' if met else 'MISSED'} {description:58s} {value:6.2f}  (target {target})")
    lines.extend(r.get("notes", []))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each measurement")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "latest.json"))
    parser.add_argument(
        "--training",
        action="store_true",
        help="only the training rows against the reference (20 Newsgroups, SpamAssassin)",
    )
    args = parser.parse_args()
    for corpus in ("20news", "spamassassin") if args.training else CORPORA:
        if not (DATA / corpus / "train").is_dir():
            sys.exit(f"bench: data/{corpus} is missing; run 'make corpora' first")
    if args.training:
        WORK.mkdir(parents=True, exist_ok=True)
        results = {"machine": machine(), "reps": args.reps}
        for corpus in ("20news", "spamassassin"):
            print(f"bench: training on {corpus} ...", file=sys.stderr)
            bench_training(corpus, args.reps, results)
        results["targets"] = training_targets(results)
        print(report(results))
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
        return
    WORK.mkdir(parents=True, exist_ok=True)
    results = {"machine": machine(), "reps": args.reps}
    for corpus in CORPORA:
        print(f"bench: {corpus} ...", file=sys.stderr)
        bench_corpus(corpus, args.reps, results)
    print("bench: single-message latency ...", file=sys.stderr)
    bench_latency(max(args.reps, 10) * 2, results)
    print("bench: learning and forgetting one message ...", file=sys.stderr)
    bench_learning(max(args.reps, 10) * 2, results)
    print("bench: 20news x1 / x8, -j 1 / -j 2 ...", file=sys.stderr)
    bench_scaling(max(2, args.reps // 2), results)
    print("bench: a million lines through predict --lines ...", file=sys.stderr)
    bench_stream(results)
    print("bench: 10 and 40 messages of 4 MB ...", file=sys.stderr)
    bench_large_messages(max(2, args.reps // 2), results)
    print("bench: nbtext serve asked by spamc, against bogofilter and nbtext filter ...", file=sys.stderr)
    from serve import bench_serve, latency_table, serve_targets  # bench/serve.py: runnable alone too

    bench_serve(args.reps, results)
    results["targets"] = targets(results) + serve_targets(results)
    print("bench: 20news x1 / x8 on Dask clusters of 1 and 2 workers ...", file=sys.stderr)
    from cluster import bench_cluster, cluster_targets  # bench/cluster.py: needs the dask extra

    bench_cluster(max(2, args.reps // 2), results)
    results["cluster-shipped"] = {k: summary([v]) for k, v in results["cluster-shipped"].items()}
    results["targets"] += cluster_targets(results)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print(report(results))
    print(latency_table(results))
    print(f"\n(written to {os.path.relpath(args.out, ROOT)})")


if __name__ == "__main__":
    main()
