"""The manifest contract: what pack writes, verify/doctor and the bootstrap read back.

No Windows needed: the bundles here are written by hand through bundler.formats.manifest, and
the bootstrap's reader is the shipped module's own function.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundler.cli import main
from bundler.formats.manifest import (
    MANIFEST_FORMAT,
    SIGNATURE_STATES,
    BootstrapEntry,
    DamagedManifest,
    FileEntry,
    Manifest,
    RecipeRef,
    UnsupportedManifest,
    Versions,
    parse_manifest,
    read_manifest,
    write_manifest,
)
from bundler.runtime import common as bootstrap

FILES = (FileEntry(path="cudnn/cudnn64_8.dll", name="cudnn64_8.dll", size=5, sha256="a" * 64,
                   component="core", source="cudnn", machine="AMD64", version="8.0.3.33"),
         FileEntry(path="cudnn/LICENSE.txt", name="LICENSE.txt", size=3, sha256="b" * 64,
                   component="licence", source="cudnn", machine="", version=""))
MANIFEST = Manifest(
    recipe=RecipeRef("demo", "c" * 64), platform="win-amd64",
    versions=Versions(cudnn="8.0.3.33", cuda="10.1", min_driver="418.96"),
    runtime_dir="cudnn", components=("core",), files=FILES,
    load_order=("cudnn/cudnn64_8.dll",),
    bootstrap=BootstrapEntry(sha256="d" * 64, path="_cudnn_bootstrap.py"))


def _bundle(root: Path, data: Any) -> Path:
    """A folder app whose manifest holds `data`, with the files it lists."""
    (root / "cudnn").mkdir(parents=True, exist_ok=True)
    (root / "cudnn" / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    return root


def _data(manifest: Manifest = MANIFEST) -> dict[str, Any]:
    return json.loads(manifest.to_bytes())


def test_written_manifest_reads_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    write_manifest(path, MANIFEST)
    assert read_manifest(path) == MANIFEST
    # Optional fields left empty are not written: the format stays what it was.
    assert "min_driver_compat" not in _data()["versions"]
    assert set(_data()["bootstrap"]) == {"path", "sha256"}
    assert "signature" not in _data()["files"][0] and "signer" not in _data()["files"][0]


def _set(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    *parents, last = dotted.split(".")
    node: Any = data
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is KeyError:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return data


# Hand edits that once crashed doctor with a traceback, and their kin: each must be
# refused as a damaged manifest naming the field.
DAMAGES = [
    ("versions", None), ("versions", []), ("versions", "10.1"), ("versions.cuda", 10.1),
    ("versions.min_driver", KeyError), ("versions.min_driver_compat", 452),
    ("recipe", None), ("recipe", "demo"), ("recipe.name", 3), ("recipe.sha256", KeyError),
    ("platform", None), ("components", "core"), ("components", [1]),
    ("files", {}), ("files.0", "cudnn/cudnn64_8.dll"), ("files.0.size", "5"),
    ("files.0.size", -1), ("files.0.size", True), ("files.0.sha256", None),
    ("files.0.path", "../outside.dll"), ("files.0.path", "C:/Windows/x.dll"),
    ("files.0.path", "cudnn\\cudnn64_8.dll"), ("files.0.version", 8), ("load_order", None),
    ("load_order.0", "cudnn/missing.dll"), ("load_order.0", 7), ("bootstrap", None),
    ("bootstrap", {"sha256": "x"}), ("bootstrap.path", "/abs.py"), ("require_driver", "yes"),
    ("runtime_dir", "../cudnn"), ("format", "1"), ("format", 0), ("format", KeyError),
    ("files.0.signature", "trusted"), ("files.0.signature", 1), ("files.0.signer", 3),
    ("files.0.signed_at", None),
]


@pytest.mark.parametrize("field, value", DAMAGES, ids=[f"{f}={v!r}" for f, v in DAMAGES])
def test_a_damaged_manifest_is_refused_naming_the_field(tmp_path: Path, field: str,
                                                        value: Any) -> None:
    data = _set(_data(), field, value)
    with pytest.raises(DamagedManifest) as raised:
        parse_manifest(data, tmp_path / "manifest.json")
    assert "the manifest is damaged" in raised.value.message


@pytest.mark.parametrize("field, value", DAMAGES[:12], ids=[f"{f}" for f, _ in DAMAGES[:12]])
@pytest.mark.parametrize("command", ["verify", "doctor"])
def test_verify_and_doctor_refuse_a_damaged_manifest_with_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, field: str,
        value: Any) -> None:
    app = _bundle(tmp_path / "app", _set(_data(), field, value))
    assert main([command, str(app)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bundler: error: ") and "the manifest is damaged" in err
    assert "Traceback" not in err


def test_a_newer_format_is_refused_not_misread(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    data = _data()
    data["format"] = MANIFEST_FORMAT + 1
    data["files"] = "a future layout"
    with pytest.raises(UnsupportedManifest, match="written by a newer bundler"):
        parse_manifest(data, tmp_path / "manifest.json")
    app = _bundle(tmp_path / "app", data)
    assert main(["verify", str(app)]) == 2
    assert "upgrade bundler" in capsys.readouterr().err


@pytest.mark.parametrize("version", [MANIFEST_FORMAT + 1, 0, -1, True, "1", None])
def test_the_bootstrap_refuses_a_format_it_does_not_read(tmp_path: Path, version: Any) -> None:
    data = _data()
    data["format"] = version
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(bootstrap.BundledRuntimeError, match=f"has format {version!r}"):
        bootstrap.read_manifest(str(path))


def test_the_bootstrap_and_the_tools_read_the_same_format() -> None:
    assert bootstrap.MANIFEST_FORMAT == MANIFEST_FORMAT


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=12)
_text = st.text(max_size=20)
_entries = st.lists(st.builds(
    FileEntry, path=_names.map(lambda n: f"rt/{n}.dll"), name=_names, size=st.integers(0, 2**40),
    sha256=_text, component=_names, source=_names, machine=st.sampled_from(["AMD64", ""]),
    version=_text, signature=st.sampled_from(SIGNATURE_STATES), signer=_text,
    signed_at=st.sampled_from(["", "2023-08-05T20:21:43Z"]), signature_root=_text),
    max_size=6, unique_by=lambda e: e.path)


@st.composite
def _manifests(draw: st.DrawFn) -> Manifest:
    files = tuple(draw(_entries))
    order = draw(st.permutations([f.path for f in files]))
    frozen = draw(st.booleans())
    return Manifest(
        recipe=RecipeRef(draw(_text), draw(_text)), platform=draw(_text),
        versions=Versions(draw(_text), draw(st.sampled_from(["10.1", "11.8", "12.9.1"])),
                          draw(_text), draw(st.sampled_from(["", "452.39"]))),
        runtime_dir="rt", components=tuple(draw(st.lists(_names, max_size=4))), files=files,
        load_order=tuple(order),
        bootstrap=(BootstrapEntry(sha256=draw(_text), module="_cudnn_bootstrap",
                                  runtime_hook="hook.py") if frozen
                   else BootstrapEntry(sha256=draw(_text), path="_cudnn_bootstrap.py")),
        require_driver=draw(st.booleans()))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(manifest=_manifests())
def test_the_bootstrap_reads_every_manifest_the_writer_produces(
        tmp_path: Path, manifest: Manifest) -> None:
    """What start-up uses: the load order, the versions for the driver check, the
    require_driver flag, and each file's version for report()."""
    path = tmp_path / "manifest.json"
    write_manifest(path, manifest)
    assert read_manifest(path) == manifest
    seen = bootstrap.read_manifest(str(path))
    assert seen["load_order"] == list(manifest.load_order)
    assert seen.get("require_driver", False) is manifest.require_driver
    versions = seen["versions"]
    assert (versions["cuda"], versions["min_driver"], versions.get("min_driver_compat", "")) == (
        manifest.versions.cuda, manifest.versions.min_driver, manifest.versions.min_driver_compat)
    assert {f["path"]: f.get("version", "") for f in seen["files"]} == {
        f.path: f.version for f in manifest.files}
    assert seen["recipe"]["name"] == manifest.recipe.name


def test_a_frozen_apps_bootstrap_entry_needs_no_path() -> None:
    frozen = replace(MANIFEST, bootstrap=BootstrapEntry(sha256="e", module="_cudnn_bootstrap",
                                                        runtime_hook="pyi_rth.py", stored="x"))
    assert parse_manifest(json.loads(frozen.to_bytes()), Path("m.json")) == frozen
