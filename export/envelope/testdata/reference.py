#!/usr/bin/env python3
"""Independent reference implementation of the agentstate envelope, format v1.

Written from docs/envelope.md alone (not from the Go code), with Python's
hashlib/hmac and the "cryptography" package (AES-GCM, Argon2id). Given
testdata/vectors.json it re-seals every vector and checks the bytes, and opens
every pinned blob and checks the plaintext.

    python3 export/envelope/testdata/reference.py export/envelope/testdata/vectors.json
"""

import hashlib
import hmac
import json
import struct
import sys

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

MAGIC = b"AGSENV"
CIPHER_ID = b"aes-256-gcm-v1"


def hkdf_sha256(ikm, salt, info, length):
    """RFC 5869 HKDF with SHA-256; an empty salt means 32 zero bytes."""
    prk = hmac.new(salt or b"\x00" * 32, ikm, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def key_id(master):
    return hkdf_sha256(master, b"", b"agentstate envelope v1: key id", 16)


def passphrase_key(passphrase, salt, time, memory_kib, threads):
    return Argon2id(salt=salt, length=32, iterations=time, lanes=threads,
                    memory_cost=memory_kib).derive(passphrase)


def encode_header(randomized, chunk_size, kid, salt, kdf):
    flags = (1 if randomized else 0) | (2 if kdf else 0)
    h = MAGIC + bytes([1, flags, len(CIPHER_ID)]) + CIPHER_ID
    h += struct.pack(">I", chunk_size) + kid + salt
    if kdf:
        time, memory_kib, threads, kdf_salt = kdf
        h += bytes([1]) + struct.pack(">IIBB", time, memory_kib, threads, len(kdf_salt)) + kdf_salt
    return h


def file_aead(master, salt, header):
    material = hkdf_sha256(master, salt, b"agentstate envelope v1: file key" + header, 39)
    return AESGCM(material[:32]), material[32:]


def nonce(prefix, index, last):
    return prefix + struct.pack(">I", index) + bytes([1 if last else 0])


def seal(master, plaintext, chunk_size, random_salt=None, kdf=None):
    if random_salt is None:
        salt = hkdf_sha256(master, hashlib.sha256(plaintext).digest(),
                           b"agentstate envelope v1: deterministic salt", 32)
    else:
        salt = random_salt
    header = encode_header(random_salt is not None, chunk_size, key_id(master), salt, kdf)
    aead, prefix = file_aead(master, salt, header)
    chunks = [plaintext[i:i + chunk_size] for i in range(0, len(plaintext), chunk_size)] or [b""]
    out = header
    for i, chunk in enumerate(chunks):
        out += aead.encrypt(nonce(prefix, i, i == len(chunks) - 1), chunk, header)
    return out


def parse_header(blob):
    assert blob[:6] == MAGIC, "magic"
    assert blob[6] == 1, "version"
    flags, id_len = blob[7], blob[8]
    assert flags & ~3 == 0, "flags"
    pos = 9
    cipher_id = blob[pos:pos + id_len]
    pos += id_len
    assert cipher_id == CIPHER_ID, "cipher id"
    (chunk_size,) = struct.unpack(">I", blob[pos:pos + 4])
    pos += 4
    kid = blob[pos:pos + 16]
    pos += 16
    salt = blob[pos:pos + 32]
    pos += 32
    kdf = None
    if flags & 2:
        assert blob[pos] == 1, "kdf id"
        time, memory_kib, threads, salt_len = struct.unpack(">IIBB", blob[pos + 1:pos + 11])
        pos += 11
        kdf = (time, memory_kib, threads, blob[pos:pos + salt_len])
        pos += salt_len
    return dict(chunk_size=chunk_size, kid=kid, salt=salt, kdf=kdf, size=pos)


def open_blob(blob, master=None, passphrase=None):
    h = parse_header(blob)
    if passphrase is not None:
        time, memory_kib, threads, kdf_salt = h["kdf"]
        master = passphrase_key(passphrase, kdf_salt, time, memory_kib, threads)
    assert key_id(master) == h["kid"], "wrong key"
    header = blob[:h["size"]]
    aead, prefix = file_aead(master, h["salt"], header)
    body, step = blob[h["size"]:], h["chunk_size"] + 16
    pieces = [body[i:i + step] for i in range(0, len(body), step)] or [b""]
    out = b""
    for i, piece in enumerate(pieces):
        out += aead.decrypt(nonce(prefix, i, i == len(pieces) - 1), piece, header)
    return out


def plaintext_of(spec):
    kind, _, arg = spec.partition(":")
    if kind == "hex":
        return bytes.fromhex(arg)
    if kind == "pattern":
        return bytes(i % 251 for i in range(int(arg)))
    raise ValueError(spec)


def main(path):
    with open(path) as f:
        vectors = json.load(f)
    for v in vectors:
        pt = plaintext_of(v["plaintext"])
        assert hashlib.sha256(pt).hexdigest() == v["plaintextSha256"], v["name"]
        kdf, passphrase = None, None
        if v.get("passphrase"):
            passphrase = v["passphrase"].encode()
            p, kdf_salt = v["kdf"], bytes.fromhex(v["kdfSalt"])
            kdf = (p["time"], p["memoryKiB"], p["threads"], kdf_salt)
            master = passphrase_key(passphrase, kdf_salt, p["time"], p["memoryKiB"], p["threads"])
        else:
            master = bytes.fromhex(v["key"])
        assert key_id(master).hex() == v["keyId"], v["name"] + ": key id"
        random_salt = bytes.fromhex(v["randomSalt"]) if v.get("randomSalt") else None
        blob = seal(master, pt, v["chunkSize"], random_salt, kdf)
        assert len(blob) == v["ciphertextSize"], v["name"] + ": size"
        assert blob.hex().startswith(v["headerHex"]), v["name"] + ": header"
        assert hashlib.sha256(blob).hexdigest() == v["ciphertextSha256"], v["name"] + ": ciphertext sha256"
        if v.get("ciphertextHex"):
            assert blob.hex() == v["ciphertextHex"], v["name"] + ": ciphertext"
            pinned = bytes.fromhex(v["ciphertextHex"])
            if passphrase is not None:
                got = open_blob(pinned, passphrase=passphrase)
            else:
                got = open_blob(pinned, master=master)
            assert got == pt, v["name"] + ": decrypt"
        print("ok  " + v["name"])


if __name__ == "__main__":
    main(sys.argv[1])
