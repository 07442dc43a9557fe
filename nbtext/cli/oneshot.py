"""The commands a mail pipeline runs once per message: `predict` of stdin or of one file
holding one message (also with `--is LABEL`), and `filter`.

procmail or maildrop start nbtext for every message, so its start-up is paid per message.
These commands' work lives here, and `fast()` serves them without importing click when
their arguments are plain (`-m FILE`, `--model-file FILE`, `-`, and for predict one FILE,
`--is LABEL` and `-v`, or of stdin `--proba` and `--format`); nbtext.cli.entry hands
anything else to the full command line
(nbtext.cli.commands), with the same output, messages and exit statuses.
"""

import os
import sys
from itertools import islice

from nbtext.choices import DEFAULT_MAX_BYTES, DEFAULT_MODEL, PREDICT_FORMATS
from nbtext.errors import (
    SIGINT,
    TEMPFAIL,
    NbtextError,
    Terminated,
    WriteFailed,
    die_of_sigpipe,
    ignore_signals,
    one_line,
    os_error,
    quiet_stdout,
    signal_name,
)
from nbtext.delivery.judging import OneMessageModel
from nbtext.report.output import ReaderGone, write, write_line


def default_model_path():
    return os.environ.get("NBTEXT_MODEL") or DEFAULT_MODEL


def predict_stdin_figures(model_path, alpha, output, header=False, max_bytes=DEFAULT_MAX_BYTES):
    """`predict` of stdin in `output`'s form (--proba, -k, --threshold, --format), with the
    #path line first if `header` (--column-names): for its one document the one-message
    path's lines when they are the whole model's (OneMessageModel.printed_lines), else (and
    for an mbox of several messages) the whole model's. Exit status."""
    from nbtext.report.text import NO_DOCUMENTS, Skipped, proba_header

    model = OneMessageModel(model_path, alpha)
    head = proba_header(model, output, 0, header)
    documents = stdin_documents(max_bytes)
    first, second = next(documents), next(documents, None)
    if second is None and first.error is None:
        lines = model.printed_lines(first.data, output)
        if lines is not None:
            write_batches(head, [(1, lines)])
            return 0
    skipped = Skipped()
    done = write_predictions(
        model.model, (d for d in (first, second, *documents) if d is not None), output, 1, skipped, 0, head
    )
    return skipped.summary(done, NO_DOCUMENTS)


def write_predictions(model, docs, output, jobs, skipped, explain=0, head=()):
    """Stream the lines of nbtext.report.text.prediction_lines, batch by batch, in input order."""
    from nbtext.jobs.parallel import scored_batches
    from nbtext.report.text import prediction_line_batches

    scored = scored_batches(model, docs, jobs, skipped, explain)
    return write_batches(list(head), prediction_line_batches(model, scored, output))


def write_batches(first_lines, line_batches):
    """Write `first_lines`, then each batch of (count, lines) as it comes, flushed (a
    pipeline sees every batch at once); returns the count summed."""
    if first_lines:
        write_line("\n".join(first_lines))
    done = 0
    for count, lines in line_batches:
        write_line("\n".join(lines))
        done += count
    return done


def stdin_documents(max_bytes=DEFAULT_MAX_BYTES):
    """The documents on stdin, as every reader reads a file (its one document, or an
    mbox's messages), each up to `max_bytes` (--max-bytes; the rest is left unread)."""
    from nbtext.reading.documents import opened_documents, stdin_bytes

    return opened_documents(stdin_bytes(), "-", max_bytes=max_bytes)


def predict_stdin_labels(model_path, alpha=None, unsure_below=None, max_bytes=DEFAULT_MAX_BYTES):
    """`predict` of stdin, labels only: the label alone of its one document, or for an mbox
    of several messages a line each, name<TAB>label<TAB>probability, as for a file."""
    from nbtext.report.output import tsv_field

    model = OneMessageModel(model_path, alpha)
    documents = stdin_documents(max_bytes)
    first, second = next(documents), next(documents, None)
    if second is None:
        write_line(model.decide(first.data, unsure_below)[0])
        return 0
    for document in (first, second, *documents):
        label, p = model.decide(document.data, unsure_below)
        write_line(f"{tsv_field(document.name)}\t{label}\t{p:.4f}")
    return 0


def predict_file(model_path, path):
    """`predict FILE` of a regular file holding one document (one message, or an mbox of
    one), read and named as the full command line does (nbtext.reading.documents.file_documents) and
    printed as it prints it; None for anything else (a folder, an mbox of several, a file
    that cannot be read), which the full command line reads and reports in its words."""
    from stat import S_ISREG

    from nbtext.reading.documents import file_documents
    from nbtext.report.output import tsv_field

    try:
        if not S_ISREG(os.stat(path).st_mode):
            return None
    except OSError:
        return None
    documents = list(islice(file_documents(path), 2))
    if len(documents) != 1 or documents[0].error is not None:
        return None
    (document,) = documents
    label, p = OneMessageModel(model_path).decide(document.data)
    write_line(f"{tsv_field(document.name)}\t{label}\t{p:.4f}")
    return 0


def is_label_status(
    model_path, is_label, alpha=None, unsure_below=None, verbose=False, paths=(), max_bytes=DEFAULT_MAX_BYTES
):
    """bogofilter's convention for one message (stdin, or the one file in `paths`): 0 if it
    is `is_label`, 1 if not, 2 if unsure, 3 on any error. An error is always one line on
    stderr (a delivery log shows it); the label is printed only if `verbose`."""
    if len(paths) > 1:
        print("Error: --is classifies one message: give one FILE, or none for stdin", file=sys.stderr)
        return 3
    path = paths[0] if paths else None
    try:
        model = OneMessageModel(model_path, alpha)
        if is_label not in model.classes:
            raise NbtextError(f"--is {is_label!r} is not a class of the model ({', '.join(model.classes)})")
        if path is None or path == "-":
            documents = list(islice(stdin_documents(max_bytes), 2))
        else:
            from nbtext.reading.documents import file_documents

            documents = list(islice(file_documents(path, max_bytes=max_bytes), 2))
        if len(documents) > 1:
            raise NbtextError(
                f"--is classifies one message, and {'stdin' if path in (None, '-') else path} holds several (an mbox)"
            )
        if documents[0].error is not None:
            raise NbtextError(f"cannot read {path} ({documents[0].error})")
        document = documents[0].data
        label, p = model.decide(document, unsure_below)
    except NbtextError as e:
        print(one_line(f"Error: {e}"), file=sys.stderr)
        return 3
    if verbose:
        try:
            write_line(f"{label}\t{p:.4f}")
        except ReaderGone:
            die_of_sigpipe()
        except OSError as e:
            print(one_line(f"Error: {os_error(e)}"), file=sys.stderr)
            return 3
    return 2 if label == "unsure" else 0 if label == is_label else 1


def filter_stdin(model_path, alpha=None, unsure_below=None, explain=0, max_bytes=DEFAULT_MAX_BYTES, refusal=None):
    """Copy the message on stdin to stdout with X-Nbtext-Class / -Probability / -Score added.

    Earlier X-Nbtext-* lines are replaced; with `explain` N, X-Nbtext-Evidence lists the N
    tokens that decided. Its first `max_bytes` bytes are classified; the message's bytes are
    held whole before anything else can fail, and whatever happens after, they go out whole
    or the exit status says they did not:
    0, the message went out with its verdict (`error` for a message that cannot be
    classified); 1, the model is missing, unreadable or not a valid model file (the
    message went out tagged `error`); TEMPFAIL (75), the message could not be written out
    whole, or SIGTERM, SIGHUP or SIGINT stopped the filter before it was (EX_TEMPFAIL:
    procmail and Dovecot deliver the message as it came, untagged; maildrop keeps it queued). Once it is out whole, signals are ignored. Problems go to stderr, one line each. `refusal`: why the command line could
    not be taken (a usage error): said, and the message goes out tagged `error`, status 1,
    as for a model that cannot be read.
    """
    said_to = sys.stderr
    if _from_a_socket():
        sys.stderr = _SaidToDovecot(said_to, model_path)
    try:
        return _filtered(model_path, alpha, unsure_below, explain, max_bytes, refusal)
    except Terminated as e:
        return not_passed_on(e.signum)
    except KeyboardInterrupt:
        return not_passed_on(SIGINT)
    finally:
        if sys.stderr is not said_to:
            sys.stderr.flush()
            sys.stderr = said_to


def _from_a_socket():
    """Whether the message comes on a socket: Dovecot's script service (nbtext-service.conf)
    hands it so, where procmail, maildrop and Dovecot's own start of the program give a pipe."""
    import stat

    try:
        return stat.S_ISSOCK(os.fstat(0).st_mode)
    except (OSError, ValueError):
        return False


class _SaidToDovecot:
    """stderr for a filter run by Dovecot's script service, which logs each line as `nbtext:
    Error: LINE` from a process of no user: a line names the model it was run with (the
    user's, %h/.nbtext/mail.model in the shipped settings) where nbtext's own `Error: ` or
    `nbtext: ` would have stood (the log said `Error: Error:` and no user). Lines go out whole."""

    def __init__(self, stream, model_path):
        self.stream, self.prefix, self.pending = stream, f"filter -m {model_path}: ", ""

    def write(self, text):
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            for own in ("Error: ", "nbtext: "):
                if line.startswith(own):
                    line = line[len(own) :]
                    break
            self.stream.write(self.prefix + line + "\n")
        return len(text)

    def flush(self):
        if self.pending:
            self.write("\n")
        self.stream.flush()


def delivers_a_message(argv):
    """Whether the command line `argv` (without the program's name) is `filter`'s: a signal
    that stops it before its message is out whole is then TEMPFAIL, wherever it comes."""
    return argv[:1] == ["filter"]


def not_passed_on(signum):
    """The exit status of a filter stopped by a signal before its message was written out
    whole: TEMPFAIL (EX_TEMPFAIL: the delivery agent passes on the original, untagged, or keeps
    it queued), said in one line."""
    print(f"Error: stopped by {signal_name(signum)}: the message was not passed on", file=sys.stderr)
    quiet_stdout()
    return TEMPFAIL


def _filtered(model_path, alpha, unsure_below, explain, max_bytes, refusal=None):
    """filter_stdin's work."""
    from nbtext.delivery.headers import CLASS_HEADER, SPAM, filed_class
    from nbtext.delivery.judging import UNJUDGED, loaded, tagged, verdict
    from nbtext.reading.documents import stdin_bytes

    try:
        message = stdin_bytes().read()
    except NbtextError as e:  # stdin closed: there is no message to pass on
        print(one_line(f"Error: {e}"), file=sys.stderr)
        return TEMPFAIL
    except OSError as e:  # unreadable
        print(one_line(f"Error: {os_error(e, 'cannot read the message on stdin')}"), file=sys.stderr)
        return TEMPFAIL
    status, judged = 0, UNJUDGED
    try:
        if refusal is not None:
            raise NbtextError(refusal)
        model = loaded(model_path, alpha)  # (a bad model file is exit status 1, not a bad message)
        if filed_class(model.classes) is None:  # every message goes on, tagged with the classes the model has
            print(
                f"nbtext: warning: the model {model_path} has no class {SPAM!r} (its classes: "
                f"{', '.join(model.classes)}): no message is tagged {CLASS_HEADER}: {SPAM}",
                file=sys.stderr,
            )
        # (a message's own problems are its verdict, `error`; a model file refused only as the
        # message's tokens read it, ModelRefused, is the model's, as when it is loaded)
        judged = verdict(model, message, unsure_below, explain, max_bytes)
    except NbtextError as e:
        print(one_line(f"Error: {e}"), file=sys.stderr)
        status = 1
    try:
        write(tagged(message, judged.fields))
        # The message is out whole: from here on its exit status says so. (A signal in the
        # instant before this line still makes it 75: the delivery agent keeps the original.)
        ignore_signals()
    except ReaderGone:
        print("Error: cannot write the message: Broken pipe", file=sys.stderr)
        quiet_stdout()
        return TEMPFAIL
    except OSError as e:
        # The message could not be passed on: EX_TEMPFAIL, and the delivery agent has the
        # original (procmail and Dovecot deliver it untagged, maildrop keeps it queued).
        print(one_line(f"Error: {os_error(e, 'cannot write the message')}"), file=sys.stderr)
        quiet_stdout()
        return TEMPFAIL
    return status


def plain_options(args):
    """{"model", "is", "verbose", "stdin", "explain", "proba", "format", "paths"} if `args`
    hold nothing but -m FILE / --model-file[=]FILE (the last wins, as in click), --is LABEL,
    -v, --explain N (N a whole number from 1), --proba, --format[=]FORMAT, one '-' and PATHs
    that do not start with '-'; else None."""
    options, i = (
        {
            "model": default_model_path(),
            "is": None,
            "verbose": False,
            "stdin": False,
            "explain": 0,
            "proba": False,
            "format": "tsv",
            "paths": [],
        },
        0,
    )
    while i < len(args):
        arg = args[i]
        if arg == "--explain" and i + 1 < len(args) and args[i + 1].isdecimal() and int(args[i + 1]) >= 1:
            options["explain"], i = int(args[i + 1]), i + 2
        elif arg == "--format" and i + 1 < len(args) and args[i + 1] in PREDICT_FORMATS:
            options["format"], i = args[i + 1], i + 2
        elif arg.startswith("--format=") and arg.split("=", 1)[1] in PREDICT_FORMATS:
            options["format"], i = arg.split("=", 1)[1], i + 1
        elif arg == "--proba":
            options["proba"], i = True, i + 1
        elif arg in ("-m", "--model-file", "--is") and i + 1 < len(args):
            options["is" if arg == "--is" else "model"], i = args[i + 1], i + 2
        elif arg.startswith(("--model-file=", "--is=")):
            name, value = arg[2:].split("=", 1)
            options["is" if name == "is" else "model"], i = value, i + 1
        elif arg in ("-v", "--verbose") or (arg == "-" and not options["stdin"]):
            options["verbose" if arg != "-" else "stdin"], i = True, i + 1
        elif arg and not arg.startswith("-"):
            options["paths"].append(arg)
            i += 1
        else:
            return None
    return options


def learning_options(args, forget):
    """{"model", "quiet", "new_classes", "paths"} if `args` (of `train` or `forget`) hold
    nothing but -m FILE / --model-file[=]FILE, -q, (train) --update and --new-classes, and
    paths or LABEL=PATHs that do not start with '-'; else None. `train` without --update is
    None."""
    options, update, i = {"model": default_model_path(), "quiet": False, "new_classes": False, "paths": []}, forget, 0
    while i < len(args):
        arg = args[i]
        if arg in ("-m", "--model-file") and i + 1 < len(args):
            options["model"], i = args[i + 1], i + 2
            continue
        if arg.startswith("--model-file="):
            options["model"] = arg.split("=", 1)[1]
        elif arg in ("-q", "--quiet"):
            options["quiet"] = True
        elif arg == "--update" and not forget:
            update = True
        elif arg == "--new-classes" and not forget:
            options["new_classes"] = True
        elif arg and not arg.startswith("-"):
            options["paths"].append(arg)
        else:
            return None
        i += 1
    return options if update and options["paths"] else None


def learn(argv):
    """`train --update` or `forget` with plain arguments, as the full command line runs
    them (the documents read by the same readers, the same messages), without click: a
    learn-on-error job pays its start-up for every message corrected."""
    import time

    from nbtext.jobs.learning import changed_model, nothing_to_update
    from nbtext.reading.documents import DEFAULT_BATCH, in_batches
    from nbtext.reading.sources import labelled_documents, path_documents
    from nbtext.report.text import NOTHING_TO_LEARN, Skipped, not_learned

    forget = argv[0] == "forget"
    options = learning_options(argv[1:], forget)
    if options is None or (not options["quiet"] and sys.stderr.isatty()):
        return None  # on a terminal, the full command line draws the progress of a long job
    model_path, paths, quiet, started = options["model"], options["paths"], options["quiet"], time.perf_counter()
    with said_once_written() as say:
        if forget:
            documents = path_documents(paths)
        else:
            if nothing_to_update(model_path, paths, options["new_classes"]):
                if not quiet:
                    print(NOTHING_TO_LEARN, file=sys.stderr)
                return 0
            documents = labelled_documents(paths, empty_ok=True)
        skipped = Skipped(say)
        learned = changed_model(
            model_path,
            model_path,
            documents,
            lambda docs: in_batches(docs, DEFAULT_BATCH),
            skipped,
            forget,
            None if quiet else lambda doc: say(not_learned(doc)),
            options["new_classes"],
        )
    return learning_said(learned, model_path, time.perf_counter() - started, skipped, quiet, print_to_stderr)


class said_once_written:
    """The block of a command that writes a model file: what it says of its input (its
    warnings, and the lines given to the `say` it yields: the documents skipped or not
    learned) is held, and said in order once the block is done. When the model cannot be
    written (WriteFailed: a full disk, a file size limit) the error is said alone; any other
    end (a refusal, Ctrl-C) says them first, as they may be what explains it. (A class, not
    contextlib's decorator: contextlib would be one more import in one message's start-up.)"""

    def __enter__(self):
        import warnings

        show, held = warnings.showwarning, []
        self.held, self.caught = held, warnings.catch_warnings()
        self.caught.__enter__()
        warnings.showwarning = lambda message, category, filename, lineno, *_, **__: held.append(
            lambda: show(message, category, filename, lineno)
        )
        return lambda line: held.append(lambda: print(line, file=sys.stderr))

    def __exit__(self, kind, error, traceback):
        self.caught.__exit__(kind, error, traceback)
        if not isinstance(error, WriteFailed):
            for said in self.held:
                said()
        return False


def learning_said(learned, output, seconds, skipped, quiet, echo):
    """What `train --update` or `forget` says of what it did (nbtext.jobs.learning.UpdateOutcome):
    its summary line through `echo` unless `quiet`, then the skipped documents' count; the
    exit status."""
    from nbtext.report.text import documents_done, learning_summary

    if not quiet:
        echo(learning_summary(output, seconds, learned.model, learned.stats, learned.pending))
    return skipped.summary(documents_done(learned.stats))


def print_to_stderr(line):
    print(line, file=sys.stderr)


def fast(argv):
    """Serve `predict` of stdin (plain, --is, --proba or --format) or `filter` with plain arguments, and
    `train --update` or `forget` (see `learn`); None when it cannot (click then parses
    them)."""
    if argv and argv[0] in ("train", "forget"):
        try:
            return learn(argv)
        except NbtextError as e:
            print(one_line(f"Error: {e}"), file=sys.stderr)
            return 1
    if not argv or argv[0] not in ("predict", "filter"):
        return None
    options = plain_options(argv[1:])
    if options is None:
        return None
    figures = options["proba"] or options["format"] != "tsv"  # predict's line of one message, with its figures
    if argv[0] == "filter" and (
        options["stdin"] or options["verbose"] or options["is"] is not None or options["paths"] or figures
    ):
        return None
    if options["paths"] and (options["stdin"] or len(options["paths"]) > 1 or options["is"] is not None or figures):
        return None  # several documents (or --is of a file, or figures of a file): the full command line
    if figures and (options["is"] is not None or options["verbose"]):
        return None  # (a usage error, the full command line's to say)
    if (options["verbose"] and options["is"] is None) or (options["explain"] and argv[0] != "filter"):
        return None  # -v without --is, predict --explain: left to the full command line
    try:
        if argv[0] == "filter":
            return filter_stdin(options["model"], explain=options["explain"])
        if options["is"] is not None:
            return is_label_status(options["model"], options["is"], verbose=options["verbose"])
        if options["paths"]:
            return predict_file(options["model"], options["paths"][0])
        if figures:
            from nbtext.report.text import Output

            return predict_stdin_figures(options["model"], None, Output(options["format"], options["proba"]))
        return predict_stdin_labels(options["model"])
    except NbtextError as e:  # (a reader gone is nbtext.cli.entry's to handle, for every command)
        print(one_line(f"Error: {e}"), file=sys.stderr)
        return 1
