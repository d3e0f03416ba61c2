"""Models built once from local files and kept in a cache folder: the ONNX MiniLM (rag/index/onnx.py) and the
ONNX language model converted from a GGUF file (rag/answering/onnx_llm.py).

A built model is named by what it was built from (`content_key`: the source files' bytes and the recipe), so
a changed model or recipe gets a new build and never a stale one. It is built under a temporary name beside
its place and then renamed (`build_once`), so a killed build, or two processes building at once, never leave
half a model where a load would find it.

A cold start reads the key of every model it loads. Hashing the two bundled models' files took 0.32 s here (the
93 MiB GGUF 0.18 s, MiniLM's 86 MiB of weights 0.14 s, read from the page cache), so each file's digest is
remembered in the cache folder (`digests.json`) under its path, size and time of last change; a file that is
replaced or rewritten is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

DIGESTS = "digests.json"
# Two services in one process build a model once: a lock per target, so converting the language model (about a
# minute) never holds up the embedding model's export in another thread, as one lock for both did.
_BUILD_LOCKS: dict[Path, threading.Lock] = {}
_MEMO_LOCK = threading.Lock()  # also guards _BUILD_LOCKS


def content_key(recipe: str, files: Iterable[Path], cache_dir: Path) -> str:
    """A short hash of the recipe and the bytes of `files`: the cache key of what is built from them."""
    key = hashlib.sha256(recipe.encode())
    for file in files:
        key.update(bytes.fromhex(file_digest(Path(file), Path(cache_dir).expanduser())))
    return key.hexdigest()[:12]


def file_digest(file: Path, cache_dir: Path) -> str:
    """The sha256 of the file's bytes, remembered in `cache_dir` while its path, size and time of change hold."""
    stat = file.stat()  # a missing file: FileNotFoundError, as reading it would give
    stamp = f"{file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    memo = cache_dir / DIGESTS
    known = _read_json(memo)
    if stamp in known:
        return str(known[stamp])
    with file.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    try:  # remembered if the folder can be written; a read-only cache only hashes again next time
        cache_dir.mkdir(parents=True, exist_ok=True)
        with _MEMO_LOCK:
            known = {**_read_json(memo), stamp: digest}  # re-read: another process may have added its own
            fd, tmp = tempfile.mkstemp(prefix=f".{DIGESTS}.", dir=cache_dir)
            with os.fdopen(fd, "w") as out:
                json.dump(known, out)
            os.replace(tmp, memo)
    except OSError:
        pass
    return digest


def _read_json(path: Path) -> dict[str, object]:
    try:
        read = json.loads(path.read_text())
    except (OSError, ValueError):  # none yet, or damaged: every digest is computed again
        return {}
    return read if isinstance(read, dict) else {}


def build_once(target: Path, write: Callable[[Path], None], complete: Callable[[Path], bool]) -> Path:
    """`target` (a file or a folder), made by `write(path)` if it is not `complete` yet; returns `target`.

    `write` makes the file or folder at the path it is given: a temporary one beside `target`, renamed onto
    `target` when done. Another process that finishes first wins; its build is kept. A temporary folder whose
    process is gone (killed with `kill -9`, which runs no clean-up) is removed by the next build. OSError if the
    folder can't be written; whatever `write` raises, as it raised it.
    """
    with _MEMO_LOCK:
        lock = _BUILD_LOCKS.setdefault(target, threading.Lock())
    with lock:
        if complete(target):
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(target)
        work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        (work / OWNER).write_text(str(os.getpid()))
        try:
            write(work / target.name)
            try:
                os.replace(work / target.name, target)
            except OSError:  # a folder can't replace a folder: another process built it first
                if not complete(target):
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


OWNER = ".owner"  # in a build's temporary folder: the id of the process building there
ABANDONED_AFTER = 60.0  # seconds: a temporary folder with no owner yet is another process's, just made, before it


def _remove_abandoned(target: Path) -> None:
    """The temporary folders of earlier builds of `target` whose process has ended, removed."""
    for work in target.parent.glob(f".{target.name}.*"):
        try:
            owner = int((work / OWNER).read_text())
        except (OSError, ValueError):
            owner = None
        try:
            stale = not _running(owner) if owner else time.time() - work.stat().st_mtime > ABANDONED_AFTER
        except OSError:  # removed meanwhile
            continue
        if stale:
            shutil.rmtree(work, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def dies_with_parent() -> None:
    """For `subprocess` as `preexec_fn`: the child is killed when the process that started it ends, however it
    ends (Linux's PR_SET_PDEATHSIG), so a killed build leaves no builder writing on; elsewhere, nothing."""
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
