"""The commands a mail pipeline runs once per message: `predict` of stdin and `filter`.

procmail or maildrop start nbtext for every message, so its start-up is paid per message.
Both commands' work lives here, and `main()` (the `nbtext` executable) serves them without
importing click when their arguments are plain (`-m FILE`, `--model-file FILE`, `-`);
anything else goes through the full command line (nbtext.cli), with the same output,
messages and exit statuses.
"""

import os
import sys

from nbtext.errors import NbtextError

DEFAULT_MODEL = "nbtext.model"


def default_model_path():
    return os.environ.get("NBTEXT_MODEL") or DEFAULT_MODEL


def load_model(path, alpha=None):
    from nbtext.modelfile import load

    if not os.path.exists(path):
        raise NbtextError(f"model {path} does not exist (train one with 'nbtext train', or pass -m FILE)")
    model = load(path)
    return model if alpha is None else model.with_alpha(alpha)


def decide(model, probabilities, unsure_below=None):
    """(label, its probability): the most probable class, or 'unsure' below the threshold."""
    k = int(probabilities.argmax())
    p = float(probabilities[k])
    if unsure_below is not None and p < unsure_below:
        return "unsure", p
    return model.classes[k], p


def classify(model, document, unsure_below=None):
    """The label of one document (bytes; empty is the empty document)."""
    return decide(model, model.predict_proba([document])[0], unsure_below)[0]


def filter_stdin(model_path, alpha=None, unsure_below=None):
    """Copy the message on stdin to stdout with X-Nbtext-Class / -Probability added.

    Returns the exit status: 1 when the model cannot be loaded (the message still passes
    through, marked `error`), else 0. Problems go to stderr.
    """
    from nbtext.mail import looks_like_mail
    from nbtext.mailfilter import verdict_fields, with_headers

    message = sys.stdin.buffer.read()
    is_mail = looks_like_mail(message)
    status, fields = 0, verdict_fields("error", None)
    try:
        model = load_model(model_path, alpha)
    except NbtextError as e:
        print(f"Error: {e}", file=sys.stderr)
        status = 1
    else:
        try:
            if not is_mail:
                raise NbtextError("not a mail message (no header block)")
            probabilities = model.predict_proba([message])[0]
            fields = verdict_fields(*decide(model, probabilities, unsure_below))
        except NbtextError as e:
            print(f"nbtext: {e}", file=sys.stderr)
    sys.stdout.buffer.write(with_headers(message, fields, is_mail))
    sys.stdout.buffer.flush()
    return status


def plain_model_option(args):
    """The model path if `args` hold nothing but -m FILE / --model-file[=]FILE and '-'
    (the last -m wins, as in click), the default path if they hold only '-'; else None."""
    model, i = default_model_path(), 0
    while i < len(args):
        arg = args[i]
        if arg in ("-m", "--model-file") and i + 1 < len(args):
            model, i = args[i + 1], i + 2
        elif arg.startswith("--model-file="):
            model, i = arg.split("=", 1)[1], i + 1
        elif arg == "-" and args.count("-") == 1:
            i += 1
        else:
            return None
    return model


def fast(argv):
    """Serve `predict` of stdin or `filter` with plain arguments; None when it cannot."""
    if not argv or argv[0] not in ("predict", "filter"):
        return None
    model = plain_model_option(argv[1:])
    if model is None or (argv[0] == "filter" and "-" in argv[1:]):
        return None
    try:
        if argv[0] == "filter":
            return filter_stdin(model)
        print(classify(load_model(model), sys.stdin.buffer.read()), flush=True)
        return 0
    except NbtextError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def main():
    status = fast(sys.argv[1:])
    if status is None:
        from nbtext.cli import main as full

        full()
    sys.exit(status)
