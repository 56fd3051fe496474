"""atomic_write.py - the one way the project's Python scripts write an output: into a private
temporary file beside it (tempfile.mkstemp: a fresh, unpredictable name), mode 0644, then
renamed onto it, so a reader never sees half a file and an interrupted run leaves the old one.
Imported by scripts/ and bench/."""
import os
import tempfile


def write_atomic(path, write, mode="w", newline=None):
    """write(f) with f open on a temporary file beside path (text mode "w" or binary "wb"),
    then renamed onto path"""
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=os.path.dirname(os.path.abspath(path)))
    try:
        f = os.fdopen(fd, mode, newline=newline)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    try:
        with f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
