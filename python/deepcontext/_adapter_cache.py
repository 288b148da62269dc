"""The per-user cache of compiled adapters, safe against other users.

Code in this cache is loaded into every profiled process, so nothing in it
is trusted by name alone:

* the cache is a per-user directory ``<root>/uid-<uid>``, created 0700 and
  checked on every use: it must be a real directory (opened with O_NOFOLLOW,
  never through a symlink) owned by the current user and not accessible to
  group or others. A directory of ours that others could write is made
  private again and its files are discarded; anything else is refused with
  a CacheError. Everything below it is reached through the checked
  directory's descriptor, so replacing a directory above it (in a shared,
  world-writable DEEPCONTEXT_CACHE_DIR) cannot redirect a load;
* every cached library has its SHA-256 recorded beside it
  (``<name>.so.sha256``); the library is hashed through the very descriptor
  that is then loaded (``/proc/self/fd/N``), so what is loaded is what was
  checked. A library whose hash is missing or differs is rebuilt;
* files are opened relative to the checked directory with O_NOFOLLOW, so a
  planted symlink (a lock file pointing at /etc/passwd) is never followed.
"""

import ctypes
import errno
import hashlib
import os
import stat
import sys

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class CacheError(RuntimeError):
    """The cache directory cannot be trusted or used."""


def root():
    """The directory holding every user's cache directory."""
    explicit = os.environ.get("DEEPCONTEXT_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "deepcontext")


def _warn(message):
    sys.stderr.write("deepcontext: warning: %s\n" % message)
    sys.stderr.flush()


def _open_private_dir(parent_fd, name, shown):
    """Opens (creating it 0700 if needed) the directory `name` under
    parent_fd, checked to be ours and private; returns its descriptor."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent_fd)
    except FileExistsError:
        pass
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise CacheError("%s is not a directory (a symlink or a file): refusing to use it "
                             "as the adapter cache; remove it" % shown) from None
        raise CacheError("cannot open the adapter cache %s: %s" % (shown, error.strerror)) \
            from None
    info = os.fstat(fd)
    if info.st_uid != os.getuid():
        os.close(fd)
        raise CacheError("the adapter cache %s belongs to uid %d, not to you (uid %d): "
                         "refusing to load code from it; remove it or set "
                         "DEEPCONTEXT_CACHE_DIR" % (shown, info.st_uid, os.getuid()))
    if stat.S_IMODE(info.st_mode) & 0o077:
        _warn("the adapter cache %s was accessible to other users (mode %o): made it "
              "private (0700) and discarded its files" % (shown, stat.S_IMODE(info.st_mode)))
        os.chmod(fd, 0o700)
        _discard_files(fd)
    return fd


def _discard_files(dir_fd):
    """Removes the files (not directories) of a directory that others could
    write: none of them can be trusted."""
    for name in os.listdir(dir_fd):
        try:
            if not stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass


def open_folder(folder):
    """Descriptor of this user's checked cache folder `folder` (created if
    needed), and its path for messages and compilers. Raises CacheError."""
    top = os.path.abspath(root())
    os.makedirs(top, exist_ok=True)
    top_fd = os.open(top, _DIR_FLAGS)
    try:
        user_name = "uid-%d" % os.getuid()
        user_fd = _open_private_dir(top_fd, user_name, os.path.join(top, user_name))
    finally:
        os.close(top_fd)
    try:
        path = os.path.join(top, user_name, folder)
        return _open_private_dir(user_fd, folder, path), path
    finally:
        os.close(user_fd)


def open_lock(dir_fd, name):
    """The lock file `name` in the checked directory, never through a symlink."""
    try:
        return os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                       dir_fd=dir_fd)
    except OSError as error:
        raise CacheError("cannot open the lock file %s in the adapter cache: %s"
                         % (name, error.strerror)) from None


def remove_stale_temporaries(dir_fd):
    """Removes "<name>.<pid>.tmp" files of builds whose process is gone (a
    build killed half-way leaves one). Call with the build lock held."""
    for name in os.listdir(dir_fd):
        parts = name.rsplit(".", 2)
        if len(parts) != 3 or parts[2] != "tmp" or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
            continue  # its builder still runs
        except ProcessLookupError:
            pass
        except OSError:
            continue  # another user's process: running
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass


def _sha256_of_fd(fd):
    digest = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return digest.hexdigest()
        digest.update(chunk)


def _recorded_hash(dir_fd, name):
    try:
        fd = os.open(name + ".sha256", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError:
        return None
    try:
        return os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)


def open_verified(dir_fd, name):
    """Descriptor of the cached library `name` when it is a regular file of
    ours whose content matches its recorded hash; None otherwise."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    info = os.fstat(fd)
    if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid()
            or _sha256_of_fd(fd) != _recorded_hash(dir_fd, name)):
        os.close(fd)
        return None
    return fd


def record_hash(dir_fd, name):
    """Writes `name`.sha256 (atomically) for the library just built."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        digest = _sha256_of_fd(fd)
    finally:
        os.close(fd)
    temporary = "%s.sha256.%d.tmp" % (name, os.getpid())
    out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW |
                  os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        os.write(out, (digest + "\n").encode())
    finally:
        os.close(out)
    os.replace(temporary, name + ".sha256", src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def load(path):
    """Loads the cached library at `path` after checking it again: the
    descriptor that was hashed is the one handed to the dynamic loader."""
    directory, name = os.path.split(path)
    dir_fd, checked = open_folder(os.path.basename(directory))
    try:
        if os.path.abspath(checked) != os.path.abspath(directory):
            raise CacheError("%s is not in this user's adapter cache" % path)
        fd = open_verified(dir_fd, name)
    finally:
        os.close(dir_fd)
    if fd is None:
        raise CacheError("the cached library %s does not match its recorded SHA-256: "
                         "refusing to load it" % path)
    try:
        return ctypes.CDLL("/proc/self/fd/%d" % fd, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    finally:
        os.close(fd)
