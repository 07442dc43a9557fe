"""The peer: scikit-learn doing nbtext's job on the same files.

    python bench/sklearn_job.py train TRAIN_FOLDER MODEL      # CountVectorizer() + MultinomialNB(alpha=1), saved
    python bench/sklearn_job.py predict MODEL TEST_FOLDER     # path<TAB>label lines; accuracy on stderr

A folder holds one sub-folder per class, as nbtext reads them.
"""

import os
import sys

import joblib
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.naive_bayes import MultinomialNB


def read(folder):
    paths, texts, labels = [], [], []
    for label in sorted(os.listdir(folder)):
        for parent, _, files in os.walk(os.path.join(folder, label)):
            for name in sorted(files):
                path = os.path.join(parent, name)
                with open(path, "rb") as f:
                    texts.append(f.read().decode("utf-8", "replace"))
                paths.append(path)
                labels.append(label)
    return paths, texts, labels


def train(folder, model_path):
    _, texts, labels = read(folder)
    vectorizer = CountVectorizer()
    classifier = MultinomialNB(alpha=1.0).fit(vectorizer.fit_transform(texts), labels)
    joblib.dump((vectorizer, classifier), model_path)


def predict(model_path, folder):
    vectorizer, classifier = joblib.load(model_path)
    paths, texts, labels = read(folder)
    predicted = classifier.predict(vectorizer.transform(texts))
    sys.stdout.write("".join(f"{p}\t{l}\n" for p, l in zip(paths, predicted)))
    correct = sum(p == l for p, l in zip(predicted, labels))
    print(f"accuracy {correct / len(labels):.6f}", file=sys.stderr)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"train": train, "predict": predict}[command](*args)
