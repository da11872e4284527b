"""Property-based fuzzing of every input bundler reads: spec and recipe TOML, manifest
and lock JSON, zip central directories and PE headers. Whatever the bytes, a command
exits 0, 1 or 2 (never 3, the internal-error exit, and never a traceback), and touches
nothing but its own output (the bundle folder and the lock)."""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundler.recipe.load import shipped_recipe_dir
from tests.harness.packing import Workspace, make_workspace, run_cli, snapshot

FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
SEED_RECIPE = "cudnn-8.0.3.33-cuda10.1-win-x64"

# Values that have broken tools like this one: wrong types, NUL, huge, escaping paths,
# Windows device names, case twins, unicode outside cp1252.
TRICKY_TOML = st.sampled_from([
    '""', '"\\u0000"', '"a\\u0000b"', f'"{"x" * 5000}"', '"../.."', '"/dev/zero"', '"C:\\\\x"',
    '"CON"', '"CUDNN"', '"a/b/c"', '"_cudnn_bootstrap.py"', '"日本"', "1", "-1", "true",
    "[]", '["a", 1]', "{}", "{ a = 1 }", "1979-05-27", "3.5", '"cudnn"', '"."',
]) | st.text(max_size=20).map(json.dumps)
JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                      st.text(max_size=30), st.sampled_from(["../../x", "\u0000", "a" * 3000,
                                                             "cudnn", "CUDNN/cudnn64_8.dll"]))
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                          max_leaves=8)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path, standin_toolkit: Path,
         standin_framework: Path) -> Workspace:
    workspace = make_workspace(tmp_path_factory.mktemp("fuzz") / "ws", standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    from bundler.cli import main
    assert main(["pack", str(workspace.spec)]) == 0
    shutil.copy(shipped_recipe_dir() / f"{SEED_RECIPE}.toml", workspace.root / "r.toml")
    return workspace


@contextmanager
def copy_of(workspace: Workspace) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as scratch:
        root = Path(scratch) / "ws"
        shutil.copytree(workspace.root, root, symlinks=True)
        yield root


def run_and_check(capsys: pytest.CaptureFixture[str], root: Path, *args: object,
                  may_change: tuple[str, ...] = ("dist/", "app.spec.lock")) -> int:
    """Run the CLI; exit 0/1/2 only, no traceback, nothing changed but `may_change`."""
    def kept(snap: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in snap.items() if not k.startswith(may_change)}
    before = kept(snapshot(root))
    code, _, err = run_cli(capsys, *map(str, args))
    assert code in (0, 1, 2), err
    assert "Traceback" not in err and "internal error" not in err, err
    assert kept(snapshot(root)) == before
    assert sorted(p.name for p in root.parent.iterdir()) == ["ws"]  # nothing beside it
    return code


def mutate_toml(text: str, data: st.DataObject) -> str:
    """Replace one value, drop one line, or add one key, as a user's typo would."""
    lines = text.splitlines()
    index = data.draw(st.integers(0, len(lines) - 1))
    how = data.draw(st.sampled_from(["value", "drop", "add", "bytes"]))
    line = lines[index]
    if how == "value" and "=" in line:
        lines[index] = line.split("=", 1)[0] + "= " + data.draw(TRICKY_TOML)
    elif how == "drop":
        del lines[index]
    elif how == "add":
        key = data.draw(st.sampled_from(["name", "path", "dir", "entry", "kind", "root",
                                         "x", "components", "sha256", "as"]))
        lines.insert(index + 1, f"{key} = {data.draw(TRICKY_TOML)}")
    else:
        lines[index] = data.draw(st.text(max_size=40))
    return "\n".join(lines) + "\n"


@FUZZ
@given(data=st.data())
def test_fuzzed_specs(base: Workspace, capsys, data: st.DataObject) -> None:
    with copy_of(base) as root:
        spec = root / "app.spec"
        spec.write_text(mutate_toml(spec.read_text(), data), encoding="utf-8")
        run_and_check(capsys, root, "pack", spec, "--offline",
                      may_change=("dist/", "app.spec.lock", "app.spec"))


@FUZZ
@given(data=st.data())
def test_fuzzed_recipes(base: Workspace, capsys, data: st.DataObject) -> None:
    with copy_of(base) as root:
        spec = root / "app.spec"
        spec.write_text(spec.read_text().replace(f'"{SEED_RECIPE}"', '"r.toml"'))
        recipe = root / "r.toml"
        recipe.write_text(mutate_toml(recipe.read_text(), data), encoding="utf-8")
        run_and_check(capsys, root, "pack", spec, "--offline", "--update-lock",
                      may_change=("dist/", "app.spec.lock", "app.spec", "r.toml"))


def mutate_json(value: Any, data: st.DataObject) -> Any:
    """Replace or delete one node somewhere in the document."""
    if isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        if data.draw(st.booleans()):
            return {k: v for k, v in value.items() if k != key}
        return {**value, key: mutate_json(value[key], data)}
    if isinstance(value, list) and value and data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(value) - 1))
        return [*value[:at], mutate_json(value[at], data), *value[at + 1:]]
    return data.draw(JSON_VALUE)


@FUZZ
@given(data=st.data())
def test_fuzzed_manifests(base: Workspace, capsys, data: st.DataObject) -> None:
    with copy_of(base) as root:
        path = root / "dist" / "app" / "cudnn" / "manifest.json"
        if data.draw(st.booleans()):
            path.write_text(json.dumps(mutate_json(json.loads(path.read_text()), data)))
        else:
            raw = bytearray(path.read_bytes())
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
            path.write_bytes(bytes(raw))
        for command in ("verify", "doctor"):
            run_and_check(capsys, root, command, root / "dist" / "app", may_change=())
        run_and_check(capsys, root, "pack", root / "app.spec", "--offline")


@FUZZ
@given(data=st.data())
def test_fuzzed_locks(base: Workspace, capsys, data: st.DataObject) -> None:
    with copy_of(base) as root:
        lock = root / "app.spec.lock"
        lock.write_text(json.dumps(mutate_json(json.loads(lock.read_text()), data)))
        run_and_check(capsys, root, "verify", root / "dist" / "app", "--lock", lock,
                      may_change=())
        run_and_check(capsys, root, "pack", root / "app.spec", "--offline")


def _central_directory(path: Path) -> tuple[int, int]:
    with zipfile.ZipFile(path) as archive:
        start = archive.start_dir
    return start, path.stat().st_size


@FUZZ
@given(data=st.data())
def test_fuzzed_zip_central_directories(base: Workspace, standin_zip: Path, capsys,
                                        data: st.DataObject) -> None:
    start, end = _central_directory(standin_zip)
    with copy_of(base) as root:
        raw = bytearray(standin_zip.read_bytes())
        for _ in range(data.draw(st.integers(1, 4))):
            at = data.draw(st.integers(start, end - 1))
            raw[at] = data.draw(st.integers(0, 255))
        fuzzed = root / "fuzzed.zip"
        fuzzed.write_bytes(bytes(raw))
        run_and_check(capsys, root, "inspect", fuzzed, may_change=())
        run_and_check(capsys, root, "pack", root / "app.spec", "--offline", "--update-lock",
                      "--source", f"cudnn={fuzzed}")


@FUZZ
@given(data=st.data())
def test_fuzzed_pe_headers(base: Workspace, standin_runtime, capsys, data: st.DataObject
                           ) -> None:
    dll = standin_runtime.dir / "cudnn64_8.dll"
    with copy_of(base) as root:
        raw = bytearray(dll.read_bytes())
        for _ in range(data.draw(st.integers(1, 6))):
            at = data.draw(st.integers(0, min(len(raw), 1024) - 1))  # DOS, PE, optional
            raw[at] = data.draw(st.integers(0, 255))
        fuzzed = root / "cudnn64_8.dll"
        fuzzed.write_bytes(bytes(raw))
        run_and_check(capsys, root, "inspect", fuzzed, may_change=())
