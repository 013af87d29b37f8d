"""Build hook of the appstoreserver package: puts the self-contained libappstoreserver.so.0 into the package and
tags the wheel for the platform (py3-none-manylinux_2_28_x86_64: pure Python that loads a native library with ctypes,
and that library needs at most glibc 2.28, which scripts/check-glibc and `auditwheel show` check).

The library is taken from, in this order:
  1. the file named by the environment variable APPSTORESERVER_LIB;
  2. <repo>/build/dist/libappstoreserver.so.0 (what the README's first command, scripts/build-and-demo, builds);
  3. a CMake build of the repository (needs the Swift toolchain): cmake -S <repo> -B <repo>/build -G Ninja
     -DCMAKE_BUILD_TYPE=Release && ninja -C <repo>/build dist.
<repo> is the repository this folder (bindings/python) belongs to, or APPSTORESERVER_REPO. When none of these can
work (no library, and no swiftc, cmake or ninja on PATH) the build stops with one line saying so, before anything
else is done: the release wheel (appstoreserver-<version>-py3-none-manylinux_2_28_x86_64.whl, made by
scripts/release) is what installs without a toolchain.

The repository's LICENSE and THIRD_PARTY_NOTICES are copied into this folder (git-ignored copies) before setuptools
reads pyproject.toml, whose license-files puts them into the wheel's .dist-info/licenses/ (and into an sdist, which
then builds without the repository).
"""

import os
import re
import shutil
import subprocess
from typing import NoReturn

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
LIB_NAME = "libappstoreserver.so.0"


def version() -> str:
    with open(os.path.join(HERE, "appstoreserver", "_generated", "abi.py"), encoding="utf-8") as f:
        m = re.search(r'^APPSTORE_VERSION_STRING = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("APPSTORE_VERSION_STRING not found in appstoreserver/_generated/abi.py")
    return m.group(1)


def repo_root() -> str:
    return os.environ.get("APPSTORESERVER_REPO") or os.path.dirname(os.path.dirname(HERE))


INSTEAD = ("install the release wheel appstoreserver-{v}-py3-none-manylinux_2_28_x86_64.whl (no toolchain needed), "
           "or set APPSTORESERVER_LIB to a built self-contained libappstoreserver.so.0")


def stop(message: str) -> NoReturn:
    """Ends the build with one line (SystemExit prints its text without a traceback)."""
    raise SystemExit(f"appstoreserver: {message}")


def find_library() -> str:
    env = os.environ.get("APPSTORESERVER_LIB")
    if env:
        if not os.path.isfile(env):
            stop(f"APPSTORESERVER_LIB={env}: no such file")
        print(f"appstoreserver: bundling {env} (APPSTORESERVER_LIB)")
        return env
    repo = repo_root()
    built = os.path.join(repo, "build", "dist", LIB_NAME)
    if os.path.isfile(built):
        print(f"appstoreserver: bundling {built}")
        return built
    instead = INSTEAD.format(v=version())
    if not os.path.isfile(os.path.join(repo, "CMakeLists.txt")):
        stop(f"{LIB_NAME} not found and no repository to build it in ({repo}; APPSTORESERVER_REPO): {instead}")
    missing = [tool for tool in ("swiftc", "cmake", "ninja") if shutil.which(tool) is None]
    if missing:
        what = "the Swift toolchain (swiftc)" if "swiftc" in missing else " and ".join(missing)
        stop(f"cannot build {LIB_NAME} from source: {what} not found on PATH, and no built library "
             f"({built}). Either {instead}, or install Swift 6.1+ ({', '.join(missing)}) and run "
             "scripts/build-and-demo first (README, Install)")
    print(f"appstoreserver: {built} missing; building it with CMake (Swift toolchain required)")
    build = os.path.join(repo, "build")
    try:
        subprocess.check_call(["cmake", "-S", repo, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["ninja", "-C", build, "dist"])
    except subprocess.CalledProcessError as e:
        stop(f"building {LIB_NAME} with CMake failed ({' '.join(e.cmd[:2])} ... exited with {e.returncode}; "
             f"its output is above): {instead}")
    if not os.path.isfile(built):
        stop(f"the CMake build did not produce {built}")
    return built


NOTICE_FILES = ("LICENSE", "THIRD_PARTY_NOTICES")


def copy_notices() -> None:
    """The repository's LICENSE and THIRD_PARTY_NOTICES beside pyproject.toml (license-files may not name a path
    outside this folder); from an sdist, without the repository, the copies it carries are used."""
    repo = repo_root()
    in_repo = os.path.isfile(os.path.join(repo, "CMakeLists.txt")) and os.path.isdir(os.path.join(repo, "bindings"))
    for name in NOTICE_FILES:
        source = os.path.join(repo, name)
        target = os.path.join(HERE, name)
        if in_repo and os.path.isfile(source):
            shutil.copyfile(source, target)
        elif not os.path.isfile(target):
            stop(f"{name} not found in the repository {repo} (APPSTORESERVER_REPO) nor in {HERE}")


class BuildPy(build_py):
    """Copies the native library into the built package (after clearing what an earlier in-tree build left, so a
    module the generator no longer writes cannot linger in the wheel)."""

    def run(self) -> None:
        library = find_library()  # first: without one, nothing else is done or printed
        shutil.rmtree(os.path.join(self.build_lib, "appstoreserver"), ignore_errors=True)
        super().run()
        target = os.path.join(self.build_lib, "appstoreserver", LIB_NAME)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(library, target)
        os.chmod(target, 0o755)


class BinaryDistribution(Distribution):
    """A distribution with a native part: installed as platform-specific (platlib), wheel not pure."""

    def has_ext_modules(self) -> bool:
        return True


class BdistWheel(bdist_wheel):
    """Platform wheel (it carries a native library), for any Python 3 (the library is loaded with ctypes, so no
    CPython ABI is involved): py3-none-manylinux_2_28_<arch> on Linux, since the self-contained library is linked
    against glibc 2.28's symbols (docs/platforms.md); package indexes refuse plain linux_<arch> wheels."""

    def get_tag(self):  # type: ignore[no-untyped-def]
        _, _, plat = super().get_tag()
        if plat.startswith("linux_"):
            plat = "manylinux_2_28_" + plat[len("linux_"):]
        return "py3", "none", plat


copy_notices()
setup(version=version(), distclass=BinaryDistribution, cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel})
