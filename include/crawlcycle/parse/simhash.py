"""64-bit SimHash of a text's word 3-shingles, and an index finding near-duplicates (Hamming distance <= 3).

Each shingle is hashed with BLAKE2b (8 bytes, stable across processes and runs); bit i of the
fingerprint is 1 when most shingle hashes have bit i set. Texts that share most shingles get
fingerprints a few bits apart.
"""

from __future__ import annotations

import re
from hashlib import blake2b

import numpy as np

SHINGLE_WORDS = 3
NEAR_DUPLICATE_BITS = 3
_WORD = re.compile(r"\w+")


def simhash(text: str) -> int | None:
    """Fingerprint of ``text`` as an unsigned 64-bit int, or None when it has no words."""
    words = _WORD.findall(text.lower())
    if not words:
        return None
    # the shifted lists end the shingles at the last whole one; a shorter text is one shingle
    shifted = (words[i:] for i in range(SHINGLE_WORDS))
    shingles = [" ".join(s) for s in zip(*shifted, strict=False)] or [" ".join(words)]
    n = len(shingles)
    digests = b"".join([blake2b(s.encode(), digest_size=8).digest() for s in shingles])
    bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8).reshape(n, 8), axis=1)
    majority = bits.sum(axis=0, dtype=np.int64) * 2 > n
    return int.from_bytes(np.packbits(majority).tobytes(), "big")


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


class NearDuplicateIndex:
    """Fingerprints split into four 16-bit bands: two fingerprints at most 3 bits apart share a band."""

    def __init__(self) -> None:
        self._bands: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
        self._seq = 0

    def add(self, fingerprint: int, key: str) -> None:
        self._seq += 1
        for band in range(4):
            self._bands.setdefault((band, (fingerprint >> (16 * band)) & 0xFFFF), []).append(
                (self._seq, fingerprint, key))

    def find(self, fingerprint: int) -> str | None:
        """Key of the earliest added fingerprint within NEAR_DUPLICATE_BITS, or None."""
        best = None
        for band in range(4):
            for seq, other, key in self._bands.get((band, (fingerprint >> (16 * band)) & 0xFFFF), ()):
                if hamming(fingerprint, other) <= NEAR_DUPLICATE_BITS and (best is None or seq < best[0]):
                    best = (seq, key)
        return best[1] if best else None
