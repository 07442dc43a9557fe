"""The measured figures the code's comments stand on, measured again on this machine: a
Markdown table of what a choice in the code avoids or gains (and where), the figure now,
and how it was measured (docs/performance.md, "Figures behind the code").

    .venv/bin/python bench/figures.py        # after make corpora: the rows of a corpus not there say so

About a minute: one 20 Newsgroups training, import costs in fresh interpreters (the median
of several), the rest in this process.
"""

import hashlib
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from functools import cached_property
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
NBTEXT = str(Path(sys.executable).with_name("nbtext"))
NEWS = ROOT / "data" / "20news" / "train"
SPAMASSASSIN = ROOT / "data" / "spamassassin"
RUNS = 5  # fresh interpreters per import cost
MB = 1e6
# The patterns the code replaced, as they were (git history has them in place)
OLD_QUOTED_VALUE = re.compile(r';\s*([\w.\-]+\*?)\s*=\s*("(?:[^"\\]|\\.)*"|[^;\s]*)')
OLD_HIDDEN = re.compile(r"(?is)<!--.*?-->|<!--[^>]*>|<(script|style)\b.*?(?:</\1\s*>|$)")
OLD_DELIMITER = r'rb"(?m)^--" + re.escape(boundary) + rb"(--)?[ \t]*\r?$"'
SKLEARN_TOKENS = re.compile(r"(?u)\b\w\w+\b")


class Absent(Exception):
    """What a row measures on is not here."""


class Shared:
    """What several rows measure on, made once: the models (trained by the command line),
    20 Newsgroups' files and their tokens in the order a training reads them."""

    def __init__(self, folder):
        self.folder = Path(folder)

    def trained(self, name, classes):
        path = self.folder / name
        subprocess.run([NBTEXT, "train", "-q", "-o", str(path), *map(str, classes)], check=True, capture_output=True)
        return path

    @cached_property
    def demo_model(self):
        return self.trained("demo.model", [ROOT / "corpora" / "mail" / "train" / c for c in ("spam", "ham")])

    @cached_property
    def news_files(self):
        files = sorted(NEWS.glob("*/*"))
        if not files:
            raise Absent("data/20news (make corpora)")
        return files

    @cached_property
    def news_model_path(self):
        return self.trained("20news.model", sorted({f.parent for f in self.news_files}))

    @cached_property
    def news_model(self):
        import nbtext

        return nbtext.load(self.news_model_path)

    @cached_property
    def news_documents(self):
        return [f.read_bytes() for f in self.news_files]

    @cached_property
    def news_tokens(self):
        return [self.news_model.tokenize(data) for data in self.news_documents]

    @cached_property
    def news_fit(self):
        """(jll, the Brier score as a function of log 1/T) of 20 Newsgroups' fit sample: the
        out-of-fold jll of the documents a training fits T on, γ as the training fitted it."""
        from nbtext.jobs.calibration import SAMPLE, feature_rows
        from nbtext.stats.fitting import brier_of_scaled
        from nbtext.stats.out_of_fold import out_of_fold_of

        model = self.news_model
        token_lists, labels, hashes = model.calibration_sample
        limit = SAMPLE / model.class_count.sum() * 2.0**64
        fit = [i for i, h in enumerate(hashes) if h < limit]
        sample = (
            feature_rows(model.vocabulary, [token_lists[i] for i in fit]),
            [labels[i] for i in fit],
            [hashes[i] for i in fit],
        )
        jll, rows, lengths = out_of_fold_of(model, sample)
        counted = lengths > 0  # (documents without tokens keep their raw posterior: not in the fit)
        jll, rows, log_n = jll[counted], rows[counted], np.log(lengths[counted])
        exponent = model.calibration["length_exponent"]
        return jll, (lambda a: brier_of_scaled(jll, rows, a - exponent * (log_n - log_n.mean())))


ROWS = []


def row(where, claim):
    def register(measure):
        ROWS.append((where, claim, measure))
        return measure

    return register


def best_of(run, times=3):
    """The least seconds of `times` calls of run(): the one least disturbed by other work."""
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        spent.append(time.perf_counter() - started)
    return min(spent)


def best_of_each(*runs, times=5):
    """best_of of each of `runs`, their calls taking turns (so that a busy spell of the
    machine falls on both)."""
    spent = [[] for _ in runs]
    for _ in range(times):
        for run, seconds in zip(runs, spent):
            seconds.append(best_of(run, 1))
    return [min(seconds) for seconds in spent]


def in_fresh_processes(code, runs=RUNS, stdin=b""):
    """The median of the number `code` prints last, run in `runs` new interpreters."""
    values = []
    for _ in range(runs):
        result = subprocess.run([PYTHON, "-c", code], input=stdin, capture_output=True, check=True)
        values.append(float(result.stdout.split()[-1]))
    return statistics.median(values)


def import_after(module, setup):
    """Seconds `import module` adds to a new interpreter once `setup` has run (-1: `setup`
    loaded it already)."""
    return (
        f"import sys, time\n{setup}\nalready = {module!r} in sys.modules\nstarted = time.perf_counter()\n"
        f"import {module}\nprint(-1.0 if already else time.perf_counter() - started)"
    )


def one_message_import(shared, module):
    """What importing `module` adds to a process that has predicted one message on the
    one-message path (its modules loaded), as a mail pipeline's `nbtext predict` does."""
    setup = f"from nbtext.cli.oneshot import fast\nsys.argv = ['nbtext']\nfast(['predict', '-m', {str(shared.demo_model)!r}])"
    seconds = in_fresh_processes(import_after(module, setup), stdin=b"free prize now")
    return "already loaded" if seconds < 0 else f"{seconds * 1000:.2f} ms"


def peak_rss_bytes(code):
    """Bytes the peak resident memory of a new interpreter grew by while `code` ran, after
    its setup (what comes before the line `# measured`). Linux's VmHWM, the peak of the
    process's own memory (ru_maxrss would start at this large process's: it carries over a
    fork and an exec)."""
    setup, measured = code.split("# measured\n")
    peak = "int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) * 1024"
    wrapper = f"{setup}\nbefore = {peak}\n{measured}\nprint({peak} - before)"
    return float(subprocess.run([PYTHON, "-c", wrapper], capture_output=True, check=True).stdout.split()[-1])


@row("stats/counting.py, features/matrix.py", "counting and batch scoring in numpy alone, without scipy's import")
def scipy_sparse(shared):
    seconds = in_fresh_processes(import_after("scipy.sparse", "import numpy"))
    return f"{seconds:.2f} s", f"`import scipy.sparse` in a new interpreter that has numpy, median of {RUNS}"


@row("jobs/calibration.py", "minimize_bounded written out, not scipy.optimize's (its import)")
def scipy_optimize(shared):
    seconds = in_fresh_processes(import_after("scipy.optimize", "import numpy"))
    return f"{seconds:.2f} s", f"`import scipy.optimize` in a new interpreter that has numpy, median of {RUNS}"


@row("errors.py", "the signals read through _signal: what `import signal` (its enums) adds to one message")
def signal_import(shared):
    return one_message_import(shared, "signal"), (
        f"`import signal` after one `predict` on the one-message path, new interpreters, median of {RUNS}"
    )


@row("modelfile/format.py", "ModelState a plain class: what `import dataclasses` adds to one message")
def dataclasses_import(shared):
    return one_message_import(shared, "dataclasses"), (
        f"`import dataclasses` after one `predict` on the one-message path, new interpreters, median of {RUNS}"
    )


@row("journal.py", "BLAKE2 from _blake2: what `import hashlib` (OpenSSL) adds to a learner")
def hashlib_import(shared):
    return (
        f"hashlib {one_message_import(shared, 'hashlib')}, _blake2 {one_message_import(shared, '_blake2')}",
        f"each imported after one `predict` on the one-message path, new interpreters, median of {RUNS}",
    )


@row(
    "jobs/parallel.py",
    "-j's workers forked: a new interpreter (joblib's loky) imports numpy and scipy and loads the model again",
)
def worker_start(shared):
    code = f"import numpy, scipy.sparse, nbtext\nnbtext.load({str(shared.news_model_path)!r})"
    assert shared.news_model is not None  # held by this process, as by a command that forks its workers
    fresh = statistics.median(best_of(lambda: subprocess.run([PYTHON, "-c", code], check=True), 1) for _ in range(3))
    context = multiprocessing.get_context("fork")

    def forked():
        worker = context.Process(target=int)
        worker.start()
        worker.join()

    fork = statistics.median(best_of(forked, 1) for _ in range(RUNS))
    return (
        f"new interpreter {fresh:.2f} s, fork {fork * 1000:.0f} ms",
        "a new interpreter's wall time to import them and load the 20 Newsgroups model (median of 3); a fork "
        f"and join of a process holding that model (median of {RUNS})",
    )


@row("reading/tokenize.py", "`\\w\\w+` for scikit-learn's `(?u)\\b\\w\\w+\\b` (the same tokens)")
def token_pattern(shared):
    from nbtext.reading.tokenize import TOKEN_PATTERN, decode

    texts = [decode(data).lower() for data in shared.news_documents[::4]]
    ours, theirs = best_of_each(
        lambda: [TOKEN_PATTERN.findall(text) for text in texts],
        lambda: [SKLEARN_TOKENS.findall(text) for text in texts],
    )
    differ = sum(TOKEN_PATTERN.findall(text) != SKLEARN_TOKENS.findall(text) for text in texts)
    return (
        f"{1 - ours / theirs:.0%} less time ({ours:.2f} s against {theirs:.2f} s); tokens differ in {differ} documents",
        f"findall over every fourth of 20 Newsgroups' training documents ({len(texts):,}), "
        "decoded and lowercased, best of 5 taking turns",
    )


@row("reading/documents.py", "read_at_most reads a file to its size, where read(limit) reserves the whole limit")
def reading_files(shared):
    from nbtext.choices import DEFAULT_MAX_BYTES

    files = shared.news_files
    code = f"""
import time
from pathlib import Path
from nbtext.reading.documents import read_at_most
files = sorted(Path({str(NEWS)!r}).glob("*/*"))
def read_all(read):
    started = time.perf_counter()
    for path in files:
        with open(path, "rb") as f:
            read(f)
    return time.perf_counter() - started
spent = [(read_all(lambda f: f.read({DEFAULT_MAX_BYTES})), read_all(lambda f: read_at_most(f, {DEFAULT_MAX_BYTES})))
         for _ in range(3)]
print(*map(min, zip(*spent)))"""
    whole_limit, at_most = map(
        float, subprocess.run([PYTHON, "-c", code], capture_output=True, check=True).stdout.split()
    )
    return (
        f"read(limit) {whole_limit:.2f} s, read_at_most {at_most:.2f} s",
        f"20 Newsgroups' {len(files):,} training files opened and read at the default --max-bytes "
        f"({DEFAULT_MAX_BYTES:,}) in a new interpreter (in one whose allocator has handed out and taken back "
        "larger blocks, read(limit) costs less), best of 3",
    )


@row("stats/counting.py", "CountTable doubles only the side of its table that is short")
def table_growth(shared):
    from nbtext.reading.documents import DEFAULT_BATCH
    from nbtext.stats.counting import CountTable

    labels = [f.parent.name for f in shared.news_files]
    table, both = CountTable(binary=False), (0, 0)
    for start in range(0, len(labels), DEFAULT_BATCH):
        table.count(shared.news_tokens[start : start + DEFAULT_BATCH], labels[start : start + DEFAULT_BATCH])
        needed = (len(table.labels), len(table.token_columns))
        if needed[0] > both[0] or needed[1] > both[1]:  # the rule before: both sides doubled at once
            both = (max(needed[0], 2 * both[0]), max(needed[1], 2 * both[1]))
    now = table._token_counts.shape
    return (
        f"{now[0]} × {now[1]:,} ({now[0] * now[1] * 8 / MB:.0f} MB); doubling both: {both[0]} × {both[1]:,} "
        f"({both[0] * both[1] * 8 / MB:.0f} MB)",
        f"the table's shape after counting 20 Newsgroups' training split ({needed[0]} classes × {needed[1]:,} "
        f"tokens) in batches of {DEFAULT_BATCH:,}, and that of the old rule over the same batches",
    )


@row("jobs/calibration.py", "Candidates hold each document as column ids (4 bytes a token), not as strings")
def candidates(shared):
    from nbtext.jobs.calibration import SAMPLE
    from nbtext.reading.documents import DEFAULT_BATCH

    token_lists = shared.news_tokens
    as_strings = [sys.getsizeof(tokens) + sum(map(sys.getsizeof, tokens)) for tokens in token_lists]
    as_ids = [sys.getsizeof(np.zeros(len(tokens), dtype=np.int32)) for tokens in token_lists]
    hashes = [
        int.from_bytes(hashlib.blake2b("\0".join(t).encode(), digest_size=8).digest(), "little") / 2.0**64
        for t in token_lists
    ]
    kept, most = [], (0, 0, 0.0, 0.0)
    for start in range(0, len(token_lists), DEFAULT_BATCH):
        read = min(start + DEFAULT_BATCH, len(token_lists))
        bound = min(1.0, 2 * SAMPLE / read)
        kept = [i for i in kept if hashes[i] < bound] + [i for i in range(start, read) if hashes[i] < bound]
        held = (
            len(kept),
            sum(len(token_lists[i]) for i in kept),
            sum(as_strings[i] for i in kept),
            sum(as_ids[i] for i in kept),
        )
        most = max(most, held, key=lambda h: h[2])
    documents, tokens, strings, ids = most
    return (
        f"{strings / MB:.0f} MB as strings, {ids / MB:.1f} MB as column ids",
        f"the most the candidates held over a 20 Newsgroups training ({documents:,} documents, {tokens:,} "
        "tokens), each kept while a 64-bit hash of it is under the falling bound, as a training keeps them; "
        "sizes by sys.getsizeof (lists of str; int32 arrays)",
    )


@row("jobs/calibration.py", "the fit's tolerances: each step is a pass over the sample's (documents × classes) table")
def calibration_step(shared):
    jll, loss = shared.news_fit
    spent = [best_of(lambda: loss(0.5), 1) for _ in range(51)]
    return (
        f"{statistics.median(spent) * 1000:.1f} ms",
        f"one Brier score of 20 Newsgroups' fit sample ({jll.shape[0]:,} × {jll.shape[1]}), median of 51",
    )


@row("jobs/calibration.py", "minimize_bounded (Brent's method) against golden section alone")
def calibration_evaluations(shared):
    from nbtext.stats.fitting import BETA_RANGE, SCALE_TOLERANCE, minimize_bounded

    _, scaled_loss = shared.news_fit
    calls = []

    def loss(a):
        calls.append(a)
        return scaled_loss(a)

    low, high = np.log(BETA_RANGE)
    minimize_bounded(loss, low, high, SCALE_TOLERANCE)
    brent = len(calls)
    calls.clear()
    golden = (3 - 5**0.5) / 2
    a, b = low, high  # golden section to the bracket Brent's method stops at (4/3 of the tolerance)
    x, y = a + golden * (b - a), b - golden * (b - a)
    fx, fy = loss(x), loss(y)
    while b - a > 4 / 3 * SCALE_TOLERANCE:
        if fx <= fy:
            b, y, fy = y, x, fx
            x = a + golden * (b - a)
            fx = loss(x)
        else:
            a, x, fx = x, y, fy
            y = b - golden * (b - a)
            fy = loss(y)
    return (
        f"{brent} evaluations against {len(calls)}",
        "the scale's search over log BETA_RANGE to SCALE_TOLERANCE on 20 Newsgroups' fit sample, γ as fitted",
    )


@row("stats/token_counts.py", "TokenCounts.placed scatters the stored entries once, where columns searches each row")
def placed_counts(shared):
    model = shared.news_model
    kept = model.vocabulary.kept
    column_of_token = np.full(model.vocabulary.n_tokens, -1, dtype=np.intp)
    column_of_token[kept] = np.arange(len(kept))
    placed, searched = best_of_each(
        lambda: model.token_counts.placed(column_of_token, model.n_features), lambda: model.token_counts.columns(kept)
    )
    return (
        f"placed {placed:.3f} s, columns {searched:.3f} s",
        f"the loaded 20 Newsgroups model's feature counts ({len(model.classes)} × {len(kept):,}), best of 5 "
        "taking turns",
    )


@row("stats/event_models.py", "Multinomial.log_theta_of in place: two fewer (classes × features) temporaries")
def log_prob_temporaries(shared):
    from nbtext.stats.event_models import Multinomial

    sums = np.asarray(shared.news_model.feature_sums, dtype=np.float64)
    alpha = shared.news_model.alpha

    def peak(compute):
        tracemalloc.start()
        compute()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak / MB

    in_place = peak(lambda: Multinomial.log_theta_of(sums, alpha))
    plain = peak(lambda: np.log(sums + alpha) - np.log(sums.sum(axis=1) + sums.shape[1] * alpha)[:, None])
    return (
        f"{sums.nbytes / MB:.1f} MB an array; peak {in_place:.1f} MB in place against {plain:.1f} MB",
        f"tracemalloc's peak of each on the 20 Newsgroups model's feature sums ({sums.shape[0]} × {sums.shape[1]:,})",
    )


@row("modelfile/schema.py", "DENSE_PER_FILE_BYTE: a legitimate model's tables against its file's size")
def dense_per_file_byte(shared):
    from nbtext.modelfile.schema import DENSE_FLOOR, DENSE_PER_FILE_BYTE

    model, size = shared.news_model, shared.news_model_path.stat().st_size
    dense = len(model.classes) * model.vocabulary.n_tokens * 8
    return (
        f"{dense / MB:.1f} MB of tables for a {size / MB:.1f} MB file ({dense / size:.1f} a byte)",
        f"the 20 Newsgroups model: classes × tokens × 8 bytes, as the check counts them (it allows "
        f"{DENSE_PER_FILE_BYTE} a byte + {DENSE_FLOOR >> 20} MiB)",
    )


@row("modelfile/container.py", "a learner maps the model file (MAP_POPULATE), not read into a new buffer")
def mapped_model(shared):
    from nbtext.modelfile.container import mapped

    path = shared.news_model_path

    def read_into_buffer():
        with open(path, "rb") as f:
            f.read()

    def map_it():
        with open(path, "rb") as f:
            mapped(f).close()

    mapping, read = best_of_each(map_it, read_into_buffer)
    return (
        f"mapped {mapping * 1000:.1f} ms, read {read * 1000:.1f} ms",
        f"the 20 Newsgroups model's file ({path.stat().st_size / MB:.1f} MB, in the page cache), best of 5 "
        "taking turns",
    )


@row(
    "reading/mail.py",
    "a quoted parameter read in runs of escapes: the alternation kept a backtracking frame per character",
)
def quoted_value(shared):
    size = 1_000_000
    setup = f"import re\nheader = 'multipart/mixed; boundary=\"' + 'a' * {size} + '\"'\n"
    old = peak_rss_bytes(
        setup + f"pattern = re.compile({OLD_QUOTED_VALUE.pattern!r})\n# measured\npattern.findall(header)"
    )
    new = peak_rss_bytes(setup + "from nbtext.reading.mail import _parameters\n# measured\nlist(_parameters(header))")
    return (
        f"old {old / size:.0f} bytes a character ({old / size * 6e6 / 1e9:.1f} GB for 6 MB), now {new / size:.0f}",
        "peak RSS of a new interpreter over findall on a 1 MB quoted boundary=",
    )


@row("reading/mail.py", "without_hidden in one pass: the one pattern searched the rest again from each unclosed `<!--`")
def hidden_markup(shared):
    from nbtext.reading.mail import without_hidden

    def markup(size):
        return ("<!-- x " * (size // 7 + 1))[:size]

    small, large = (best_of(lambda: OLD_HIDDEN.sub(" ", markup(n)), 1) for n in (10_000, 20_000))
    now = best_of(lambda: without_hidden(markup(200_000)))
    return (
        f"old: {small:.2f} s at 10 KB, {large:.2f} s at 20 KB (quadratic: about {large * 100:.0f} s at "
        f"200 KB); now {now * 1000:.0f} ms at 200 KB",
        "re.sub of the old pattern and without_hidden on repeated `<!-- x `",
    )


@row("reading/mail.py", "split_multipart finds delimiters with bytes.find, not a pattern compiled from the boundary")
def boundary_pattern(shared):
    size = 200_000
    code = (
        f"import re, time\nboundary = b'b' * {size}\n# measured\nstarted = time.perf_counter()\n"
        f"re.compile({OLD_DELIMITER})\nprint(time.perf_counter() - started)"
    )
    memory = peak_rss_bytes(code)
    seconds = in_fresh_processes(code.replace("# measured\n", ""), runs=3)
    return (
        f"{memory / size:.0f} bytes and {seconds / size * 1e6:.1f} µs a byte of the boundary",
        "peak RSS and time of compiling the old delimiter pattern for a 200 KB boundary, new interpreters",
    )


@row("reading/mail.py", "a mail reader of its own: the standard library's email package and html.parser are slower")
def mail_reader(shared):
    files = sorted(SPAMASSASSIN.glob("*/*/*"))[::20]
    if not files:
        raise Absent("data/spamassassin (make corpora)")
    sys.path.insert(0, str(ROOT / "tests"))
    import mail_reference  # tests/mail_reference.py: email + html.parser

    from nbtext.reading.mail import mail_tokens
    from nbtext.reading.tokenize import DEFAULT_HEADERS, text_tokens

    messages = [f.read_bytes() for f in files]
    ours = best_of(lambda: [mail_tokens(m, DEFAULT_HEADERS, text_tokens) for m in messages], 1)
    theirs = best_of(lambda: [mail_reference.mail_tokens(m, DEFAULT_HEADERS, text_tokens) for m in messages], 1)
    return (
        f"{theirs / ours:.1f} times ({theirs:.2f} s against {ours:.2f} s)",
        f"tokens of every twentieth SpamAssassin message ({len(messages):,}); bench/mail_reader.py times all",
    )


@row("jobs/cluster.py", "a worker's counts packed into a few large objects before Dask serializes them")
def dask_serialization(shared):
    try:
        from distributed.protocol import serialize_bytelist
    except ImportError:
        raise Absent("the dask extra") from None
    words = ["".join(chr(97 + (i * 7 + j) % 26) for j in range(3 + i % 8)) for i in range(100_000)]
    hashes = [hash(w) & (2**63 - 1) for w in words]
    packed = ("\0".join(words), np.array(hashes, dtype=np.uint64))
    many, one = best_of_each(lambda: serialize_bytelist((words, hashes)), lambda: serialize_bytelist(packed))
    return (
        f"{many / one:.0f} times ({many * 1000:.0f} ms against {one * 1000:.1f} ms)",
        "distributed's serialize_bytelist of 100,000 short strings and hashes as lists, and as one string "
        "and one array, best of 5 taking turns",
    )


def main():
    print(
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start; Python {sys.version.split()[0]}\n"
    )
    print("| where | what it avoids or gains | figure | how it was measured |")
    print("|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        shared = Shared(folder)
        for where, claim, measure in ROWS:
            try:
                figure, how = measure(shared)
            except Absent as e:
                figure, how = "not measured", f"needs {e}"
            print(f"| `{where}` | {claim} | {figure} | {how} |", flush=True)


if __name__ == "__main__":
    main()
