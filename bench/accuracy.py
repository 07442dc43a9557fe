"""Accuracy of nbtext on the real corpora, train split -> test split, for a few settings.

    make accuracy        # or: .venv/bin/python bench/accuracy.py

Every figure the README quotes about accuracy is printed here.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
NBTEXT = str(Path(sys.executable).parent / "nbtext")

SETTINGS = {
    "spamassassin": [[], ["--alpha", "1"], ["--input", "text"], ["--features", "binary"],
                     ["--model", "bernoulli"], ["--model", "complement"]],
    "sms": [[], ["--alpha", "0.1"], ["--model", "bernoulli"], ["--model", "complement"]],
    "20news": [[], ["--alpha", "1"], ["--input", "text"], ["--input", "text", "--alpha", "0.1"],
               ["--features", "binary"], ["--features", "tfidf"],
               ["--model", "bernoulli"],
               ["--model", "complement"], ["--model", "complement", "--weight-norm"],
               ["--model", "complement", "--no-length-norm"], ["--model", "complement", "--tf", "raw"],
               ["--model", "complement", "--no-idf"], ["--model", "complement", "--features", "counts"],
               ["--model", "complement", "--features", "binary"], ["--model", "complement", "--alpha", "0.1"],
               ["--model", "gaussian"]],
}


def folders(corpus, split):
    return sorted(str(p) for p in (DATA / corpus / split).iterdir() if p.is_dir())


def main():
    print(f"{'corpus':14s} {'settings':44s} {'λ':>5s} {'accuracy':>9s} {'macro F1':>9s}  ham flagged as spam")
    with tempfile.TemporaryDirectory() as tmp:
        model = str(Path(tmp) / "m")
        for corpus, variants in SETTINGS.items():
            if not (DATA / corpus).is_dir():
                sys.exit(f"accuracy: data/{corpus} is missing; run 'make corpora' first")
            for options in variants:
                subprocess.run([NBTEXT, "train", *options, "-o", model, *folders(corpus, "train")],
                               check=True, capture_output=True)
                out = subprocess.run([NBTEXT, "eval", "-m", model, "--format", "json", *folders(corpus, "test")],
                                     check=True, capture_output=True).stdout
                report = json.loads(out)
                alpha = json.loads(subprocess.run(
                    [sys.executable, "-c", f"import nbtext; print(nbtext.load({model!r}).alpha)"],
                    check=True, capture_output=True).stdout)
                flagged = ""
                if report["classes"] == ["ham", "spam"]:
                    ham_row = report["confusion"][0]
                    flagged = f"{ham_row[1]} of {sum(ham_row)} ({ham_row[1] / sum(ham_row):.2%})"
                print(f"{corpus:14s} {' '.join(options) or '(defaults)':44s} {alpha:5g} "
                      f"{report['accuracy']:9.4f} {report['macro_f1']:9.4f}  {flagged}")


if __name__ == "__main__":
    main()
