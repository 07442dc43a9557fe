"""The Python floor: read every file, decode it, lowercase it, extract tokens; nothing else.

python bench/floor.py FOLDER...
"""

import os
import re
import sys

TOKEN = re.compile(r"\w\w+")  # nbtext's token pattern


def main(folders):
    tokens = 0
    for folder in folders:
        for parent, _, files in os.walk(folder):
            for name in files:
                with open(os.path.join(parent, name), "rb") as f:
                    tokens += len(TOKEN.findall(f.read().decode("utf-8", "replace").lower()))
    print(tokens)


if __name__ == "__main__":
    main(sys.argv[1:])
