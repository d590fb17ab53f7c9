"""Framed messages across the process boundary.

A message is a JSON header followed by zero or more raw byte blobs:

    [4-byte big-endian header length][header JSON][blob 0][blob 1]...

and the header lists each blob's size under "blobs". Nothing is ever
unpickled: the judge reads JSON and raw float32 bytes, with sizes checked
against limits before anything is allocated, so a hostile worker can send
garbage but cannot make the judge run code or exhaust its memory.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import time

from .errors import ProtocolError, WorkerTimeout

MAX_HEADER = 1 << 20  # 1 MiB of JSON is far more than any honest header

# Layout of the tensors the worker hands to solve and sends back: each lives
# inside a larger float32 buffer, between guard bands the judge checks.
OUTPUT_GUARD = 4096  # elements before and after each output (16 KiB)
INPUT_GUARD = 1 << 16  # elements before and after each input (256 KiB)
GUARD_BITS = 0x7FC0DEAD  # a quiet NaN with a payload: the guard pattern around outputs
POISON_BITS = 0x7FC00000  # the canonical NaN: outputs before each call, guards around inputs
# The rule a call breaks that launched no Triton kernel (the worker reports
# such calls of a case; the judge lets one pass only where the case needed
# no work: judge.casework.idle_rule).
NO_LAUNCH = "rule: solve must launch at least one Triton kernel, and it launched none"


def _private_codec():
    """JSON's C encoder and scanner, made once as this module loads: what
    they do cannot be changed afterwards through json's module state (a
    file in the worker swapped json's default encoder and rewrote the
    status of the worker's replies). None where Python has no C json."""
    try:
        from json import encoder, scanner
        from _json import encode_basestring_ascii, make_encoder, make_scanner
    except ImportError:  # pragma: no cover - no C accelerator
        return None, None

    def refuse(value):
        raise TypeError(f"not JSON: {type(value).__name__}")

    encode = make_encoder(None, refuse, encode_basestring_ascii, None, ": ", ", ", False, False, True)
    scan = make_scanner(json.JSONDecoder())
    del encoder, scanner
    return encode, scan


_ENCODE, _SCAN = _private_codec()


def encode_header(header: dict, blobs=(), encode=_ENCODE, join="".join, dumps=json.dumps,
                  pack=struct.Struct(">I").pack) -> bytes:
    """A message's length-prefixed header, listing the blobs that follow it
    (by what was bound as this module loaded)."""
    header = dict(header, blobs=[len(b) for b in blobs])
    raw = (join(encode(header, 0)) if encode is not None else dumps(header)).encode()
    return pack(len(raw)) + raw


def decode_header(raw: bytes | bytearray, scan=_SCAN, loads=json.loads) -> dict:
    """A header's JSON, checked: an object whose "blobs" is a list of sizes."""
    try:
        if scan is None:
            header = loads(raw)
        else:
            text = bytes(raw).decode("utf-8")
            start = len(text) - len(text.lstrip())
            header, end = scan(text, start)
            if text[end:].strip():
                raise ValueError("extra data after the header")
    except (UnicodeDecodeError, ValueError, StopIteration) as exc:
        raise ProtocolError(f"malformed header: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not a JSON object")
    header = _writable(header)
    sizes = header.setdefault("blobs", [])
    if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
        raise ProtocolError("malformed blob list")
    return header


def _writable(value):
    """The header with every text as UTF-8 can carry it. JSON's escapes can
    spell a lone surrogate (an exception message of the file's, "\\ud800"),
    which no UTF-8 writer downstream accepts (`judge submit` died writing
    its report): such text keeps the surrogate as a visible escape."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, list):
        return [_writable(item) for item in value]
    if isinstance(value, dict):
        return {_writable(key): _writable(item) for key, item in value.items()}
    return value


def send(sock: socket.socket, header: dict, blobs: list[bytes | memoryview] = ()) -> None:
    sock.sendall(encode_header(header, blobs))
    for blob in blobs:
        sock.sendall(blob)


POLL_S = 0.5  # how often a deadline that moves (a callable) is read again while waiting


def _recv_exact(sock: socket.socket, size: int, deadline, now=time.monotonic) -> bytearray:
    """`deadline`: a time on `now`'s clock, None, or a callable giving the
    deadline as it stands (read again every POLL_S while waiting)."""
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    moving = callable(deadline)
    while got < size:
        if deadline is not None:
            left = (deadline() if moving else deadline) - now()
            if left <= 0:
                raise WorkerTimeout("no answer before the deadline")
            ready, _, _ = select.select([sock], [], [], min(left, POLL_S) if moving else left)
            if not ready:
                continue  # read the clock again: it may have stood still meanwhile (judge.clock)
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            raise EOFError("the other side closed the connection")
        got += n
    return buf


def recv(sock: socket.socket, deadline=None,
         max_blob_bytes: int = 1 << 34, now=time.monotonic) -> tuple[dict, list[bytearray]]:
    """Read one message; raise EOFError when the peer is gone, WorkerTimeout
    once `now()` passes the deadline (a time, or a callable giving it),
    ProtocolError on garbage."""
    (length,) = struct.unpack(">I", _recv_exact(sock, 4, deadline, now))
    if length > MAX_HEADER:
        raise ProtocolError(f"header of {length} bytes exceeds the {MAX_HEADER}-byte limit")
    header = decode_header(_recv_exact(sock, length, deadline, now))
    sizes = header["blobs"]
    if sum(sizes) > max_blob_bytes:
        raise ProtocolError(f"{sum(sizes)} bytes of data exceed the {max_blob_bytes}-byte limit")
    return header, [_recv_exact(sock, s, deadline, now) for s in sizes]
