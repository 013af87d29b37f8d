#!/usr/bin/env python3
"""postgres_server.py -- a throwaway PostgreSQL server for the ledger's tests, from Debian's packages.

    from postgres_server import postgres, Unavailable
    with postgres() as url:          # postgresql://ledger@127.0.0.1:PORT/postgres
        ...
        url.restart()                # pg_ctl restart: every client connection is closed (reconnection tests)
        url.stop(); url.start()      # the same in two steps, to act while the server is down

initdb and pg_ctl (PATH, else /usr/lib/postgresql/*/bin) make a cluster in a temporary directory and start it on
127.0.0.1 at a free port (trust authentication, loopback only; its socket in the same directory); it is stopped and
removed at the end. PostgreSQL refuses to run as root: as root (CI), the server runs as the `postgres` user the
Debian package creates, else as a system user `appstoreledger` created here (useradd), through runuser. Unavailable
is raised (with the reason) when any of that cannot be done: callers SKIP loudly.

Run as a script, it starts a server, prints its URL and waits for stdin to close (for manual tests).
"""
from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Iterator, List, Optional


class Unavailable(Exception):
    """PostgreSQL cannot be started here (the message says why)."""


def _unavailable(message: str) -> Exception:
    """Unavailable, or where APPSTORESERVER_REQUIRE_POSTGRESQL=1 (set by scripts/test-all, whose install-deps installs
    PostgreSQL) a RuntimeError: a machine where the server should run and does not fails its tests, not skips them."""
    if os.environ.get("APPSTORESERVER_REQUIRE_POSTGRESQL") == "1":
        return RuntimeError(f"PostgreSQL is required here (APPSTORESERVER_REQUIRE_POSTGRESQL=1) and cannot run: {message}")
    return Unavailable(message)


class ServerURL(str):
    """The server's URL, with restart(): `pg_ctl restart` (fast mode: the server closes every connection), and stop()
    and start() for a test that must act while the server is down (a restart alone can fall between two requests)."""
    restart_command: List[str] = []

    def restart(self) -> None:
        self._pg_ctl("restart")

    def stop(self) -> None:
        self._pg_ctl("stop")

    def start(self) -> None:
        self._pg_ctl("start")

    def _pg_ctl(self, action: str) -> None:
        assert self.restart_command[-1] == "restart"
        r = subprocess.run(self.restart_command[:-1] + [action], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"pg_ctl {action} failed: {(r.stderr or r.stdout).strip()[-300:]}")


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    if candidates:
        return candidates[0]
    raise _unavailable(f"{name} not found (Debian: apt-get install postgresql; scripts/install-deps installs it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_user() -> Optional[str]:
    """None when not root (the server runs as this user); else a non-root user to run it as."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "appstoreledger"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    r = subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "appstoreledger"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise _unavailable(f"running as root and cannot create a user for PostgreSQL: {r.stderr.strip()}")
    return "appstoreledger"


def _as(user: Optional[str], args: List[str]) -> List[str]:
    if user is None:
        return args
    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
    if not os.path.exists(runuser):
        raise _unavailable("running as root and runuser is missing (util-linux)")
    return [runuser, "-u", user, "--"] + args


@contextlib.contextmanager
def postgres(user_name: str = "ledger") -> Iterator[str]:
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    owner = _server_user()
    top = tempfile.mkdtemp(prefix="appstoreserver-pg-")
    data = os.path.join(top, "data")
    try:
        if owner is not None:
            info = pwd.getpwnam(owner)
            os.chmod(top, 0o755)
            os.chown(top, info.pw_uid, info.pw_gid)
        r = subprocess.run(_as(owner, [initdb, "-D", data, "-U", user_name, "--auth=trust", "-E", "UTF8",
                                       "--no-locale", "--no-sync"]), capture_output=True, text=True)
        if r.returncode != 0:
            raise _unavailable(f"initdb failed: {(r.stderr or r.stdout).strip()[-400:]}")
        port = _free_port()
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {top} -c fsync=on"
        r = subprocess.run(_as(owner, [pg_ctl, "-D", data, "-l", os.path.join(top, "log"), "-o", options, "-w",
                                       "-t", "60", "start"]), capture_output=True, text=True)
        if r.returncode != 0:
            log = ""
            with contextlib.suppress(OSError):
                log = open(os.path.join(top, "log"), encoding="utf-8", errors="replace").read()[-600:]
            raise _unavailable(f"pg_ctl start failed: {(r.stderr or r.stdout).strip()[-300:]} {log}")
        try:
            url = ServerURL(f"postgresql://{user_name}@127.0.0.1:{port}/postgres")
            url.restart_command = _as(owner, [pg_ctl, "-D", data, "-l", os.path.join(top, "log"), "-o", options,
                                              "-m", "fast", "-w", "-t", "60", "restart"])
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise _unavailable("the server did not accept connections within 30 s")
                    time.sleep(0.1)
            yield url
        finally:
            subprocess.run(_as(owner, [pg_ctl, "-D", data, "-m", "fast", "-w", "stop"]), capture_output=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    try:
        with postgres() as u:
            print(u, flush=True)
            sys.stdin.read()
    except Unavailable as e:
        print(f"unavailable: {e}", file=sys.stderr)
        sys.exit(77)
