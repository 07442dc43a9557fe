"""Finding and reading documents on disk: class folders for training, paths for prediction."""

import os

from nbtext.errors import NbtextError


def class_folders(specs):
    """[(label, folder)] from CLASS_DIR arguments: `DIR` (labelled by its basename) or `LABEL=DIR`."""
    folders = []
    for spec in specs:
        if not os.path.exists(spec) and "=" in spec:
            label, folder = spec.split("=", 1)
            if not label:
                raise NbtextError(f"empty label in {spec!r} (write LABEL=DIR)")
        else:
            folder = spec
            label = os.path.basename(os.path.normpath(os.path.abspath(folder)))
        if not os.path.exists(folder):
            raise NbtextError(f"{folder} does not exist")
        if not os.path.isdir(folder):
            raise NbtextError(f"{folder} is not a folder (each class is a folder of documents)")
        folders.append((label, folder))
    return folders


def document_files(path):
    """A file is itself; a folder is every file below it, recursively, in sorted order.

    Hidden files and folders (names starting with '.') are skipped.
    """
    if not os.path.exists(path):
        raise NbtextError(f"{path} does not exist")
    if not os.path.isdir(path):
        return [path]
    found = []
    for folder, subfolders, files in os.walk(path):
        subfolders[:] = [d for d in subfolders if not d.startswith(".")]
        found.extend(os.path.join(folder, f) for f in files if not f.startswith("."))
    return sorted(found)


def labelled_files(specs):
    """[(label, file)] for the CLASS_DIR arguments; an empty class is an error."""
    pairs = []
    for label, folder in class_folders(specs):
        files = document_files(folder)
        if not files:
            raise NbtextError(f"class {label!r} has no documents (is {folder} empty?)")
        pairs.extend((label, f) for f in files)
    return pairs


def read_document(path):
    """The raw bytes of one document; an unreadable file is an NbtextError naming it."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise NbtextError(f"cannot read {path}: {e.strerror or e}") from None


def read_batches(pairs, size):
    """Batches of (key, bytes) read from [(key, path)], at most `size` at a time."""
    batch = []
    for key, path in pairs:
        batch.append((key, read_document(path)))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
