"""Text files into token files for the GPT example (vocabulary 96), bytewise.

Writes OUT/train.bin and OUT/val.bin, flat uint16 token ids (nanoGPT's
format, what `./train --data=OUT` reads): newline is 0, the printable ASCII
characters ' '..'~' are 1..95; tabs become spaces, other bytes (control
characters, non-ASCII) are dropped. Each input file's first 90% goes to
train.bin and its last 10% to val.bin; links to the same file count once.

  python3 scripts/text_tokens.py OUT FILE...
"""

import os
import sys

import numpy as np


def tokens(text):
    text = text.replace(b"\t", b" ")
    ids = np.frombuffer(text, np.uint8).astype(np.int32)
    keep = (ids == 10) | ((ids >= 32) & (ids <= 126))
    ids = ids[keep]
    return np.where(ids == 10, 0, ids - 31).astype(np.uint16)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: text_tokens.py OUT FILE...")
    out, files = sys.argv[1], sys.argv[2:]
    seen, train, val = set(), [], []
    for path in sorted(files):
        real = os.path.realpath(path)
        if real in seen or not os.path.isfile(real):
            continue
        seen.add(real)
        with open(real, "rb") as f:
            ids = tokens(f.read())
        cut = len(ids) * 9 // 10
        train.append(ids[:cut])
        val.append(ids[cut:])
    if not train:
        sys.exit("text_tokens.py: no input files")
    os.makedirs(out, exist_ok=True)
    for name, parts in (("train.bin", train), ("val.bin", val)):
        np.concatenate(parts).tofile(os.path.join(out, name))
    print(f"{len(seen)} files: {sum(map(len, train))} training tokens, "
          f"{sum(map(len, val))} validation tokens (vocabulary 96, bytewise)")


if __name__ == "__main__":
    main()
