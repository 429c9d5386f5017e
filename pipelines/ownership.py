"""What a run owns is what it wrote: every file and folder is recorded by its writer, at creation.

The run's ledger is `<run>/.trajforge-run`: a JSON header line (`{"trajforge_run": 2,
"config_hash": ...}`) followed by one JSON string per line, a path relative to the run directory.
A writer appends its paths *before* it creates them (the folders it is about to make, the
temporary name, the final name), so a kill at any point leaves nothing of ours unrecorded; lines
are appended with `O_APPEND` in one `write`, which the local filesystem keeps whole across the
worker processes of one build. A remote run directory (gs://) cannot append: each record is then
a small object under `.trajforge-ledger/`.

`--overwrite` and `--resume` delete exactly the recorded paths: files (never through a symlink,
never a symlink that replaced one of ours), then recorded folders once empty. A file a user puts
anywhere in the run, a folder of theirs inside `data/`, a symlink to their home: none is recorded,
so none is deleted. Files are written under a hidden temporary name and renamed into place, so a
reader never sees a half-written file under a final name.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from trajforge.pipelines import files

LEDGER = ".trajforge-run"
REMOTE_LEDGER_DIR = ".trajforge-ledger"
FORMAT = 2


class OwnershipError(Exception):
    """A write would replace or pass through something the run did not create."""


def _remote(run_dir: str) -> bool:
    return "://" in run_dir


def _abs(run_dir: str, rel: str) -> str:
    return files.join(run_dir, *rel.split("/")) if rel else run_dir


def _clean(rel: str) -> str:
    """A recorded path must stay inside the run: relative, normalised, no `..`."""
    rel = rel.replace(os.sep, "/").strip("/")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise OwnershipError(f"refusing to record {rel!r}: not a path inside the run directory")
    return "/".join(parts)


# ---------------------------------------------------------------------------------------------
# The ledger


def header(run_dir: str) -> dict[str, Any] | None:
    """The ledger's header, or None when `run_dir` is not a trajforge run (no ledger, an empty
    or damaged one, or one from before runs recorded what they wrote)."""
    path = _abs(run_dir, LEDGER)
    if not files.exists(path):
        return None
    try:
        with files.open_read(path) as f:
            first = f.readline().decode("utf-8")
        head = json.loads(first)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(head, dict) or head.get("trajforge_run") != FORMAT:
        return None
    return head


def legacy_marker(run_dir: str) -> bool:
    """A marker an older trajforge wrote (it listed top-level names found at the end of the
    build, not what the build created): its entries cannot be trusted for deletion."""
    path = _abs(run_dir, LEDGER)
    if not files.exists(path):
        return False
    try:
        with files.open_read(path) as f:
            body = json.loads(f.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(body, dict) and "config_hash" in body and "trajforge_run" not in body


def start(run_dir: str, config_hash: str, keep: Iterable[str] = ()) -> None:
    """(Re)write the ledger: the header and the paths still owned (`keep`)."""
    head = json.dumps({"trajforge_run": FORMAT, "config_hash": config_hash}, sort_keys=True)
    lines = [head, *(json.dumps(p) for p in sorted(set(keep)))]
    body = ("\n".join(lines) + "\n").encode("utf-8")
    if _remote(run_dir):
        pieces = files.match(_abs(run_dir, f"{REMOTE_LEDGER_DIR}/*.txt"))
        with files.create(_abs(run_dir, LEDGER)) as f:
            f.write(body)
        if pieces:  # folded into the ledger just written (`keep`)
            files.delete(pieces)
        return
    tmp = _abs(run_dir, f".{LEDGER}.tmp-{uuid.uuid4().hex}")
    with open(tmp, "wb") as f:
        f.write(body)
    os.replace(tmp, _abs(run_dir, LEDGER))


def record(run_dir: str, rels: Iterable[str]) -> None:
    """Append paths (relative to `run_dir`) to the ledger, before they are created."""
    paths = [_clean(r) for r in rels]
    if not paths:
        return
    text = "".join(json.dumps(p) + "\n" for p in paths).encode("utf-8")
    if _remote(run_dir):
        name = f"{uuid.uuid4().hex}.txt"
        with files.create(_abs(run_dir, f"{REMOTE_LEDGER_DIR}/{name}")) as f:
            f.write(text)
        return
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        fd = os.open(_abs(run_dir, LEDGER), flags, 0o644)
    except FileNotFoundError:  # a writer used outside a build (a transform in a test)
        os.makedirs(run_dir, exist_ok=True)
        fd = os.open(_abs(run_dir, LEDGER), flags, 0o644)
    try:
        os.write(fd, text)
    finally:
        os.close(fd)


def recorded(run_dir: str) -> set[str]:
    """Every path the run recorded (whether it still exists or not)."""
    texts = []
    ledger = _abs(run_dir, LEDGER)
    if files.exists(ledger):
        with files.open_read(ledger) as f:
            texts.append(f.read().decode("utf-8"))
    if _remote(run_dir):
        pattern = _abs(run_dir, f"{REMOTE_LEDGER_DIR}/*.txt")
        for path in files.match(pattern):
            with files.open_read(path) as f:
                texts.append(f.read().decode("utf-8"))
    out = set()
    for text in texts:
        for line in text.splitlines():
            try:
                path = json.loads(line)
                if isinstance(path, str):  # (the header is an object)
                    out.add(_clean(path))
            except (ValueError, TypeError, OwnershipError):
                continue  # a torn last line of a killed writer: nothing it names exists yet
    return out


def compact(run_dir: str) -> None:
    """Rewrite the ledger with the recorded paths that exist (temporary names that were
    renamed, a staging folder that was moved, progress files removed drop out); only while
    no writer of the run is left (the end of a build)."""
    head = header(run_dir)
    if head is None or _remote(run_dir):
        return
    existing = {p for p in recorded(run_dir) if os.path.lexists(_abs(run_dir, p))}
    start(run_dir, head["config_hash"], existing)


# ---------------------------------------------------------------------------------------------
# Writing


def through_symlink(run_dir: str, rel: str) -> bool:
    """Whether a folder on the way from `run_dir` to `rel` is a symlink (a user's link: we
    neither write nor delete through it)."""
    if _remote(run_dir):
        return False
    path = run_dir
    for part in rel.split("/")[:-1]:
        path = os.path.join(path, part)
        if os.path.islink(path):
            return True
    return False


def _new_dirs(run_dir: str, rel: str) -> list[str]:
    """The folders of `rel`'s parent that do not exist yet (outermost first)."""
    if _remote(run_dir):
        return []
    parts = rel.split("/")[:-1]
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return [p for p in prefixes if not os.path.isdir(_abs(run_dir, p))]


def ensure_dir(run_dir: str, rel: str) -> str:
    """Create the folder `rel` (recording each level it creates); its path."""
    rel = _clean(rel)
    if through_symlink(run_dir, rel + "/x"):
        raise OwnershipError(f"{_abs(run_dir, rel)} passes through a symlink; not writing there")
    new = _new_dirs(run_dir, rel + "/x")
    record(run_dir, new)
    if not _remote(run_dir):
        os.makedirs(_abs(run_dir, rel), exist_ok=True)
    return _abs(run_dir, rel)


@contextlib.contextmanager
def create(run_dir: str, rel: str) -> Iterator[IO[bytes]]:
    """A binary file for `rel`, written under a hidden temporary name and renamed into place
    when the block ends without error (removed otherwise); every path recorded first."""
    rel = _clean(rel)
    if through_symlink(run_dir, rel):
        raise OwnershipError(f"{_abs(run_dir, rel)} passes through a symlink; not writing there")
    parent, _, name = rel.rpartition("/")
    tmp = f"{parent + '/' if parent else ''}.{name}.tmp-{uuid.uuid4().hex[:12]}"
    record(run_dir, [*_new_dirs(run_dir, rel), tmp, rel])
    tmp_path, final = _abs(run_dir, tmp), _abs(run_dir, rel)
    ok = False
    try:
        with files.create(tmp_path) as f:
            yield f
        ok = True
    finally:
        if ok:
            _rename(tmp_path, final)
        else:
            with contextlib.suppress(Exception):
                files.delete([tmp_path])


def _rename(src: str, dst: str) -> None:
    if "://" in src:
        if files.exists(dst):
            files.delete([dst])
        files.rename([src], [dst])
    else:
        os.replace(src, dst)


def write_bytes(run_dir: str, rel: str, data: bytes) -> str:
    with create(run_dir, rel) as f:
        f.write(data)
    return _abs(run_dir, rel)


def write_text(run_dir: str, rel: str, text: str) -> str:
    return write_bytes(run_dir, rel, text.encode("utf-8"))


def move(run_dir: str, src: str, dst: str) -> None:
    """Rename the owned folder or file `src` to `dst` (which must not exist), recording the
    new paths of everything recorded under `src` first."""
    src, dst = _clean(src), _clean(dst)
    owned = recorded(run_dir)
    renamed = [dst + p[len(src) :] for p in sorted(owned) if p == src or p.startswith(src + "/")]
    record(run_dir, [*_new_dirs(run_dir, dst), *renamed])
    if not _remote(run_dir):
        os.rename(_abs(run_dir, src), _abs(run_dir, dst))
        return
    prefix = _abs(run_dir, src)
    found = files.match(prefix + "/**")
    if found:
        files.rename(found, [_abs(run_dir, dst) + p[len(prefix) :] for p in found])


# ---------------------------------------------------------------------------------------------
# Deleting


def _is_ours_to_delete(run_dir: str, rel: str) -> bool:
    path = _abs(run_dir, rel)
    if through_symlink(run_dir, rel) or os.path.islink(path):
        return False  # never through or onto a link: we never create one
    return os.path.isfile(path)


def delete_recorded(run_dir: str, selected: Callable[[str], bool] = lambda _: True) -> set[str]:
    """Delete the recorded paths for which `selected` holds: files, then folders that are
    empty once ours are gone (deepest first). Returns the recorded paths left (not selected,
    or a folder still holding someone else's files)."""
    owned = recorded(run_dir)
    chosen = {p for p in owned if selected(p)}
    if _remote(run_dir):
        paths = [_abs(run_dir, p) for p in sorted(chosen)]
        existing = [p for p in paths if files.exists(p)]
        if existing:
            files.delete(existing)
        return owned - chosen
    left = owned - chosen
    for rel in sorted(chosen):
        if _is_ours_to_delete(run_dir, rel):
            os.remove(_abs(run_dir, rel))
    for rel in sorted(chosen, key=lambda p: p.count("/"), reverse=True):
        path = _abs(run_dir, rel)
        if os.path.isdir(path) and not os.path.islink(path) and not through_symlink(run_dir, rel):
            try:
                os.rmdir(path)
            except OSError:
                left.add(rel)  # holds files we did not write: the folder stays, still ours
    return left


def is_temporary(rel: str) -> bool:
    """A writer's temporary name (`create`): never an output, always safe to clear."""
    name = rel.rsplit("/", 1)[-1]
    return name.startswith(".") and ".tmp-" in name


def under(*names: str) -> Callable[[str], bool]:
    """A selector: the paths at or under any of the top-level `names`."""
    return lambda rel: rel.split("/", 1)[0] in names


# ---------------------------------------------------------------------------------------------
# One build at a time


LOCK = ".trajforge-run.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder(run_dir: str) -> int | None:
    """The pid of a live local build holding `run_dir`, if any (a dead one's lock is stale)."""
    if _remote(run_dir):
        return None
    try:
        with open(_abs(run_dir, LOCK)) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if pid != os.getpid() and _alive(pid) else None


def acquire(run_dir: str) -> None:
    """Hold `run_dir` for this process (local runs): a second build into the same folder is
    refused while this one runs. A stale lock (its process is gone) is taken over."""
    if _remote(run_dir):
        return
    path = _abs(run_dir, LOCK)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pid = holder(run_dir)
            if pid is not None:
                raise OwnershipError(
                    f"another build (pid {pid}) is writing to {run_dir}; wait for it or use "
                    "another --output"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)  # stale: its build is gone
            continue
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()}\n")
        return
    raise OwnershipError(f"cannot lock {run_dir}: another build keeps taking it")


def release(run_dir: str) -> None:
    if _remote(run_dir):
        return
    path = _abs(run_dir, LOCK)
    with contextlib.suppress(OSError, ValueError), open(path) as f:
        if int(f.read().split()[0]) == os.getpid():
            os.remove(path)
