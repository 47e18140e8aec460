"""Room codes, presenter secrets and nicknames: what a room is named and how it is protected.

- Codes: 6 characters from a 31-letter alphabet without the look-alikes 0/O, 1/I/L, drawn with
  `secrets` (the OS CSPRNG): 31**6 = 887,503,681 codes, so a guess hits one of 100 open rooms
  with probability 1.1e-7. A code is only an address; the secret is what grants rights.
- Secrets: `secrets.token_urlsafe(24)` (192 bits). The store keeps only their SHA-256 (a
  secret of 192 random bits needs no slow hash) and compares digests with hmac.compare_digest.
- Nicknames: optional, cleaned to letters, digits, space, '-' and '_', at most 20 characters.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata

ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"   # no 0 O 1 I L
CODE_LENGTH = 6
SECRET_BYTES = 24                              # 192 bits (>= 128 required)
NICKNAME_MAX = 20


def new_code() -> str:
    """A fresh room code: CODE_LENGTH characters of ALPHABET, each from the CSPRNG."""
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(code: str | None) -> str | None:
    """What a visitor typed -> the code as stored (upper case, spaces stripped), or None when it
    cannot be a code at all (wrong length or a character outside ALPHABET)."""
    if not isinstance(code, str):
        return None
    c = "".join(code.split()).upper()
    if len(c) != CODE_LENGTH or any(ch not in ALPHABET for ch in c):
        return None
    return c


def new_secret() -> str:
    """A fresh presenter secret (URL-safe text, SECRET_BYTES random bytes)."""
    return secrets.token_urlsafe(SECRET_BYTES)


def hash_secret(secret: str) -> str:
    """SHA-256 hex digest of a secret: what the database stores instead of it."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def secret_matches(secret: str | None, stored_hash: str) -> bool:
    """Whether `secret` hashes to `stored_hash`, compared in constant time."""
    if not isinstance(secret, str) or not secret:
        return False
    return hmac.compare_digest(hash_secret(secret), stored_hash)


def clean_nickname(nickname: str | None) -> str | None:
    """An optional nickname made safe to show: NFKC-normalized, only letters, digits, space, '-'
    and '_' kept (any white space
    becomes a space), runs of spaces collapsed, trimmed to NICKNAME_MAX characters; None when
    nothing is left."""
    if not isinstance(nickname, str):
        return None
    kept = "".join(" " if ch.isspace() else ch for ch in unicodedata.normalize("NFKC", nickname)
                   if (ch.isalnum() and ch.isprintable()) or ch.isspace() or ch in "-_")
    out = " ".join(kept.split())[:NICKNAME_MAX].strip()
    return out or None
