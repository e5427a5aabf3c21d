"""Output paths: checked before any work starts, written atomically at the end.

Every command that writes checks its output path first (:func:`check_file`,
:func:`check_dir`): the kind (a file where a file is wanted, a directory where a directory
is), the extension, that it is not a device, FIFO or other special file, that its parent
exists (or can be created) and is writable, and that nothing the user has is replaced
without ``--force``. Writes go to a temporary file or directory next to the target and are
renamed into place (:func:`write_file`, :func:`write_dir`), so a reader never sees half a
file and two concurrent writers never mix their files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from gym.core.errors import GymError

#: Temporary names start with this, so a leftover is recognisable (and hidden).
TEMP_PREFIX = ".gym-tmp-"


def _fail(path: Path | str, option: str, message: str) -> GymError:
    return GymError.single(str(path), None, f"{option}: {message}")


def _lstat(path: Path, option: str) -> os.stat_result | None:
    """The path's own status (a symlink is not followed), or None when nothing is there."""
    try:
        return path.lstat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise _fail(path, option, "a part of the path is a file, not a directory") from None
    except (OSError, ValueError) as exc:
        raise _fail(path, option, _reason(exc)) from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    return str(exc) or type(exc).__name__


def _writable_dir(directory: Path, option: str, shown: Path) -> None:
    """``directory`` (or its nearest existing ancestor, which must be a directory) accepts
    a new file: tried by creating and removing an empty temporary file there."""
    probe = directory
    while True:
        st = _lstat(probe, option)
        if st is not None:
            break
        if probe.parent == probe:
            raise _fail(shown, option, "no existing directory to write into")
        probe = probe.parent
    if not probe.is_dir():
        raise _fail(shown, option, f"{probe} is not a directory")
    try:
        fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=probe)
    except (OSError, ValueError) as exc:
        raise _fail(shown, option, f"cannot create files in {probe} ({_reason(exc)})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)


def check_file(
    path: Path,
    option: str,
    *,
    suffixes: tuple[str, ...],
    force: bool,
    default_suffix: str | None = None,
) -> Path:
    """Check that ``path`` may be written as a new or replaced regular file; returns the
    path that will be written (``default_suffix`` added when the name has no extension).

    Refused (GymError): an extension not in ``suffixes``; a directory, device, FIFO or
    socket at the path; an existing file (or symlink) without ``force``; a parent that is
    a file, cannot be created, or is not writable.
    """
    if str(path) in ("", "."):
        raise _fail(path, option, "give a file name")
    if path.name.endswith("."):
        kinds = ", ".join(suffixes)
        raise _fail(path, option, f"the name ends in a dot; end it in one of {kinds}")
    if not path.suffix and default_suffix is not None:
        given = _lstat(path, option)
        if given is not None and not stat.S_ISREG(given.st_mode):
            raise _fail(path, option, "exists and is not a file; give a file name")
        path = path.with_name(path.name + default_suffix)
    if path.suffix.lower() not in suffixes:
        kinds = " or ".join(suffixes)
        raise _fail(path, option, f"the file name must end in {kinds}")
    st = _lstat(path, option)
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            try:
                target = path.stat()
            except OSError:
                target = None
            if target is not None and not stat.S_ISREG(target.st_mode):
                raise _fail(path, option, "is a link to something that is not a regular file")
        elif stat.S_ISDIR(st.st_mode):
            raise _fail(path, option, "is a directory; give a file name")
        elif not stat.S_ISREG(st.st_mode):
            raise _fail(path, option, "is a special file (device, FIFO or socket), not a file")
        if not force:
            raise _fail(path, option, "the file exists; pass --force to replace it")
    _writable_dir(path.parent, option, path)
    return path


def check_dir(path: Path, option: str, *, force: bool) -> Path:
    """Check that ``path`` may be written as a directory of results; returns it.

    Refused (GymError): something other than a directory at the path; a directory that
    holds files without ``force``; a parent that is a file, cannot be created or is not
    writable.
    """
    st = _lstat(path, option)
    if st is None:
        _writable_dir(path.parent, option, path)
        return path
    if not path.is_dir():
        raise _fail(path, option, "exists and is not a directory")
    try:
        holds_files = any(path.iterdir())
    except OSError as exc:
        raise _fail(path, option, _reason(exc)) from None
    if holds_files and not force:
        raise _fail(path, option, "the directory holds files; pass --force to write into it")
    _writable_dir(path, option, path)
    return path


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the rename is done (a write is short)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def remember(signum: int, _frame: object) -> None:
        pending.append(signum)

    old = {s: signal.signal(s, remember) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        if pending:
            raise KeyboardInterrupt


def write_file(path: Path, data: str | bytes | Callable[[Path], None], option: str) -> Path:
    """Write ``data`` (text, bytes, or a function that writes a given path) to a temporary
    file next to ``path``, then rename it into place. Missing parents are created.
    Ctrl-C and SIGTERM during the write are held until it is done."""
    with _signals_deferred():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=path.suffix, dir=path.parent)
        except OSError as exc:
            raise _fail(path, option, f"cannot write: {_reason(exc)}") from None
        tmp = Path(name)
        try:
            if callable(data):
                os.close(fd)
                data(tmp)
            else:
                with os.fdopen(fd, "wb") as f:
                    f.write(data.encode("utf-8") if isinstance(data, str) else data)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise _fail(path, option, f"cannot write: {_reason(exc)}") from None
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
    return path


#: Held in an existing ``--out`` directory while files are moved into it.
LOCK_NAME = ".gym-writing"


def write_dir(
    directory: Path, fill: Callable[[Path], list[Path]], option: str, *, force: bool
) -> list[Path]:
    """Write a directory of results: ``fill`` writes the files into a temporary directory.
    A new ``directory`` is that temporary directory, renamed (one step). Into an existing
    one (empty, or holding files with ``force``), each file is moved in one rename, under a
    lock file so two writers never mix their files; an existing directory is never
    replaced (it may be the working directory, a mount point or a link). If someone else
    filled ``directory`` meanwhile, the files stay in the temporary directory and the
    error says where. Returns the final paths."""
    existing = directory.is_dir()
    home = directory if existing else directory.parent
    try:
        home.mkdir(parents=True, exist_ok=True)
        # a short prefix: the target's own name may be as long as a name can be
        work = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX + directory.name[:32] + "-", dir=home))
    except OSError as exc:
        raise _fail(directory, option, f"cannot write: {_reason(exc)}") from None
    try:
        written = fill(work)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    names = [p.name for p in written]
    with _signals_deferred():
        try:
            if not existing:
                os.chmod(work, 0o777 & ~_umask())
                try:
                    os.rename(work, directory)
                    return [directory / n for n in names]
                except OSError:
                    if not directory.is_dir():
                        raise
                    # created by someone else meanwhile: as into an existing directory
            _move_all(work, directory, names, option, force)
        except OSError as exc:
            raise _fail(
                directory, option, f"cannot write ({_reason(exc)}); the results are in {work}"
            ) from None
    return [directory / n for n in names]


def _move_all(work: Path, directory: Path, names: list[str], option: str, force: bool) -> None:
    lock = directory / LOCK_NAME
    try:
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        raise _fail(
            directory,
            option,
            f"another gym is writing into it (or a killed one left {LOCK_NAME}: delete it); "
            f"the results are in {work}",
        ) from None
    try:
        if not force:
            others = [p for p in directory.iterdir() if p.name != LOCK_NAME and p != work]
            if others:
                raise _fail(
                    directory,
                    option,
                    f"was filled by something else while this ran; the results are in {work}",
                )
        for name in names:
            _move_into(work / name, directory / name)
        shutil.rmtree(work, ignore_errors=True)
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()


def _move_into(src: Path, dst: Path) -> None:
    """Replace ``dst`` by ``src`` in one rename (a copy to a temporary name first when
    they are on different file systems)."""
    try:
        os.replace(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=dst.parent)
        os.close(fd)
        shutil.copyfile(src, name)
        os.replace(name, dst)


def _umask() -> int:
    """The process's umask, read without changing it where the system allows (Linux's
    /proc): setting it to read it would race with any other thread creating files."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0)
    os.umask(mask)
    return mask
