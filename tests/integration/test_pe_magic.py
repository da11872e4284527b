"""The magic check before pefile (issue 28 item 6): every file bundler hands to pefile
has its 'MZ' magic, a 'PE' header inside it and every section within its size checked
first (bundler/windows/pe_file.py). A text file named .dll, a 0-byte file and a DLL cut
short are a clean "not a PE file" refusal naming the file (exit 2), pefile is never
asked, and a truncated DLL is never read as one with no imports (pefile does that)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pefile
import pytest

from bundler.errors import CheckError
from bundler.windows import pe_file
from tests.harness.packing import Workspace, make_workspace, run_cli


@pytest.fixture
def pefile_opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The files pefile was asked to open."""
    opened: list[str] = []

    class Counting(pefile.PE):   # a subclass: pefile refers to its own PE class by name
        def __init__(self, name: str | None = None, *args: object, **kwargs: object
                     ) -> None:
            opened.append(str(name))
            super().__init__(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pefile, "PE", Counting)
    yield opened


def _hostile(folder: Path, whole: Path) -> dict[str, Path]:
    data = whole.read_bytes()
    made = {"text": b"this is a README, not a DLL\n" * 4, "empty": b"",
            "cut-in-headers": data[:300], "cut-in-sections": data[:len(data) // 2],
            "one-byte-short": data[:-1]}
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in made.items():
        (folder / f"{name}.dll").write_bytes(content)
    return {name: folder / f"{name}.dll" for name in made}


def test_every_damaged_file_is_refused_before_pefile_sees_it(
        tmp_path: Path, standin_toolkit: Path, pefile_opened: list[str]) -> None:
    whole = standin_toolkit / "bin" / "cudart64_101.dll"
    for name, path in _hostile(tmp_path, whole).items():
        with pytest.raises(CheckError) as raised:
            pe_file.read_pe(path, exports=True)
        assert raised.value.message.startswith(f"{path}: not a valid Windows DLL (not a PE "
                                               "file: "), name
        assert pe_file.exported_constant(path, "cudnnGetVersion") is None
    assert pefile_opened == []
    assert pe_file.read_pe(whole).machine == "AMD64" and pefile_opened == [str(whole)]


@pytest.mark.parametrize("kind", ["cut-in-sections", "one-byte-short", "cut-in-headers"])
def test_inspect_of_a_truncated_dll_is_exit_2_naming_it(
        tmp_path: Path, standin_toolkit: Path, capsys: pytest.CaptureFixture[str],
        kind: str) -> None:
    """pefile reads a DLL cut after its headers as a DLL that imports nothing."""
    path = _hostile(tmp_path, standin_toolkit / "bin" / "cudart64_101.dll")[kind]
    code, out, err = run_cli(capsys, "inspect", path)
    assert code == 2, out + err
    assert err.startswith(f"bundler: error: {path}: not a valid Windows DLL (not a PE file: ")
    assert "Traceback" not in err and "\nhint: " in err


@pytest.fixture
def workspace(tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
              standin_framework: Path) -> Workspace:
    toolkit = tmp_path / "cuda" / "v10.1"
    shutil.copytree(standin_toolkit, toolkit)
    return make_workspace(tmp_path / "ws", standin_framework,
                          {"cudnn": standin_zip, "cuda": toolkit})


def test_a_truncated_runtime_dll_is_refused_naming_it(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cublas = tmp_path / "cuda" / "v10.1" / "bin" / "cublas64_10.dll"
    cublas.write_bytes(cublas.read_bytes()[:-1])
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2, err
    assert err.startswith("bundler: error: ") and f"{cublas.parent.parent}: " in err, err
    assert "cublas64_10.dll is not a valid Windows DLL" in err and "Traceback" not in err
    assert "not selected" not in err   # a damaged library is said once
    assert not workspace.dist.exists()


def test_app_files_named_dll_that_are_not_pe_files_never_reach_pefile(
        workspace: Workspace, pefile_opened: list[str], capsys: pytest.CaptureFixture[str]
        ) -> None:
    """The app scan reads every .dll/.pyd/.exe of the app: a thousand one-byte *.dll
    files cost a garbage collection each inside pefile (27 s measured)."""
    data = workspace.root / "app" / "data"
    data.mkdir()
    for index in range(50):
        (data / f"blob{index}.dll").write_bytes(b"x")
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert not [p for p in pefile_opened if "blob" in p]
    assert any(p.endswith("framework.dll") for p in pefile_opened)   # the real one is read


def test_reading_a_dll_runs_no_garbage_collection_and_unmaps_it(
        standin_toolkit: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pefile's PE.close() runs gc.collect() on every file: an app scan of numpy's 51
    .pyd files spent 2.8 s there. bundler unmaps the file itself, so a mapped DLL is
    never left open (Windows cannot replace a mapped file) and no collection runs."""
    import gc
    import mmap

    collections: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda *a, **k: collections.append(1) or 0)
    mapped: list[mmap.mmap] = []
    real_open = pe_file._open

    def keeping(path: Path) -> pefile.PE:
        image = real_open(path)
        mapped.append(image.__data__)
        return image

    monkeypatch.setattr(pe_file, "_open", keeping)
    dll = standin_toolkit / "bin" / "cudart64_101.dll"
    for _ in range(3):
        assert pe_file.read_pe(dll, exports=True).machine == "AMD64"
        pe_file.exported_constant(dll, "cudaRuntimeGetVersion")
    assert collections == []
    assert len(mapped) == 6 and all(isinstance(m, mmap.mmap) and m.closed for m in mapped)


def test_imports_are_read_as_dll_names_without_their_functions(
        standin_toolkit: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bundler asks which DLLs a binary imports, never which functions: pefile's parse of
    every import thunk was most of an app scan's PE reading (681 PE files: 3.4 s against
    0.7 s for the names alone, the same names)."""
    thunks: list[int] = []
    real = pefile.PE.parse_imports

    def counting(self: pefile.PE, *args: object, **kwargs: object) -> object:
        thunks.append(1)
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pefile.PE, "parse_imports", counting)
    info = pe_file.read_pe(standin_toolkit / "bin" / "cublas64_10.dll")
    assert "cudart64_101.dll" in [name.lower() for name in info.imports], info.imports
    assert info.delay_imports == () and thunks == []
