"""Where a repository's warm server lives: ``<repo>/.medallion/`` (mode 0700) holds ``serve.sock`` (0600),
``serve.pid`` and ``serve.log``. One repository, one user: the folder's owner-only mode is what keeps other
users out (a Unix socket's own mode is not honoured everywhere), and the server also checks each peer's uid.

The repository is the nearest folder at or above the working directory that holds ``.git``, else the working
directory itself, so every command run inside one checkout finds the same server.
"""

from __future__ import annotations

import os
import stat
import sys
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from framework.serve.errors import ServeError

STATE_DIR = ".medallion"
# sockaddr_un.sun_path is 108 bytes on Linux and 104 on macOS, the terminating NUL included
MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107


def repository_root(cwd: Path) -> Path:
    """The nearest folder at or above ``cwd`` that holds ``.git``; ``cwd`` itself if there is none."""
    cwd = cwd.resolve()
    return next((folder for folder in (cwd, *cwd.parents) if (folder / ".git").exists()), cwd)


@dataclass(frozen=True)
class ServePaths:
    """The files of one repository's server."""

    repo: Path

    @classmethod
    def for_cwd(cls, cwd: Path | None = None) -> ServePaths:
        """The server files of the repository that holds ``cwd`` (default: the working directory)."""
        return cls(repository_root(cwd or Path.cwd()))

    @property
    def folder(self) -> Path:
        """``<repo>/.medallion``."""
        return self.repo / STATE_DIR

    @property
    def socket(self) -> Path:
        """The Unix socket the server listens on."""
        return self.folder / "serve.sock"

    @property
    def pid(self) -> Path:
        """The file holding the server's process id."""
        return self.folder / "serve.pid"

    @property
    def log(self) -> Path:
        """The server's stdout and stderr."""
        return self.folder / "serve.log"

    def socket_path_fits(self) -> bool:
        """Whether the socket's path is short enough to bind (see :data:`MAX_SOCKET_PATH`)."""
        return len(os.fsencode(self.socket)) <= MAX_SOCKET_PATH

    def read_pid(self) -> int | None:
        """The process id in the pid file; None if there is no readable one."""
        with suppress(OSError, ValueError):
            return int(self.pid.read_text().strip())
        return None

    def remove_stale(self) -> None:
        """Remove the socket and pid files of a server that is gone."""
        for path in (self.socket, self.pid):
            with suppress(FileNotFoundError):
                path.unlink()


def ensure_private_folder(folder: Path) -> None:
    """Create ``folder`` with mode 0700, or make an existing one 0700.

    Raises:
        ServeError: ``SERVE_FOLDER_NOT_OWNED``: the folder belongs to another user (or is not a folder).
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise ServeError(f"{folder} is not a folder owned by you; remove it and run `medallion serve` again",
                         code="SERVE_FOLDER_NOT_OWNED")
    if stat.S_IMODE(info.st_mode) != 0o700:
        folder.chmod(0o700)


def pid_alive(pid: int) -> bool:
    """Whether a process with id ``pid`` exists (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with suppress(OSError):  # Linux: a zombie (exited, not yet reaped by its parent) is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True
