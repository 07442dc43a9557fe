"""What a class label may be: any text without control characters (C0, DEL, C1 and the
Unicode line and paragraph separators; a folder name that is not UTF-8, held as surrogate
escapes, is a label). A label is data that ends up in headers (filter's X-Nbtext-Class),
TSV columns and JSON, so a line break or another control character in one could forge a
header or a line: train refuses such a label, and the model reader a file that holds one."""


def label_problem(label):
    """Why `label` cannot be a class label (a sentence), or None if it can."""
    if not isinstance(label, str) or not label:
        return "a class label must be a non-empty name"
    for character in label:
        code = ord(character)
        if code < 0x20 or 0x7F <= code < 0xA0 or character in "\u2028\u2029":  # C0, DEL, C1, line breaks
            return f"the class label {label!r} holds a control character (U+{code:04X}); rename it"
    return None
