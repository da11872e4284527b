"""The trust ladder (docs/signatures.md): an input whose sha256 is a known one for its
release is verified by hash, under any file name; else NVIDIA's signature; else the pack
is refused unless allow_unsigned names the files, and then the summary, --json and the
manifest say NOT SIGNED. Real packs of the offline quickstart's stand-ins."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from bundler.pack import signatures
from bundler.recipe.load import find_recipe
from bundler.releases.catalogue import find_release
from tests.harness.packing import run_cli
from tests.harness.winenv.quickstart import QUICKSTART

SEED = "cudnn-8.0.3.33-cuda10.1-win-x64"
THIRD_PARTY = "9749e8a8f1dc0cfbb8a70d91825d0c5864426b44c3371ada1e077d8bd86b129f"
ALLOW_LINE = 'allow_unsigned = ["cudnn*.dll"]\n'


@pytest.fixture
def quickstart(tmp_path: Path) -> Path:
    """A copy of the quickstart (its spec, app and stand-in inputs), never packed."""
    copy = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, copy, ignore=shutil.ignore_patterns("dist", "*.lock"))
    return copy / "app.spec"


def _without_allow_unsigned(spec: Path) -> None:
    text = spec.read_text()
    assert ALLOW_LINE in text
    spec.write_text(text.replace(ALLOW_LINE, ""))


def test_the_seed_release_knows_nvidias_zip_by_a_third_partys_hash() -> None:
    known = signatures.known_hashes(find_recipe(SEED, Path.cwd()), "cudnn")
    assert [k.sha256 for k in known] == [THIRD_PARTY]
    assert "cudnn-10.1-windows10-x64-v8.0.3.33.zip" in known[0].what
    assert "recorded by a third party, not published by NVIDIA" in known[0].what


def test_the_quickstart_without_allow_unsigned_is_refused_naming_signature_and_hash(
        quickstart: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _without_allow_unsigned(quickstart)
    code, out, err = run_cli(capsys, "pack", quickstart)
    assert code == 2 and out == ""
    assert "must be signed by 'NVIDIA Corporation', but each is not signed" in err
    assert f"that file's is {THIRD_PARTY}" in err
    assert "recorded by a third party" in err and "allow_unsigned" in err
    assert not (quickstart.parent / "dist").exists()
    assert not quickstart.with_name("app.spec.lock").exists()


def test_allowed_unsigned_files_are_not_signed_in_summary_json_and_manifest(
        quickstart: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "pack", quickstart, "--json")
    assert code == 0, err
    summary = json.loads(out)
    said = summary["inputs_trusted"]["cudnn"]
    assert said.startswith("NOT SIGNED: not NVIDIA's published file: 7 file(s) without")
    assert f"is not {THIRD_PARTY[:12]}" in said
    manifest = json.loads((quickstart.parent / "dist/quickstart/cudnn/manifest.json")
                          .read_text())
    assert {item["source"]: item["trust"] for item in manifest["inputs"]}["cudnn"] == said
    assert {f["signature"] for f in manifest["files"] if f["source"] == "cudnn"
            and f["name"].endswith(".dll")} == {"allowed-unsigned"}
    code, out, err = run_cli(capsys, "pack", quickstart)
    assert code == 0, err
    assert "  input cudnn: NOT SIGNED: not NVIDIA's published file" in out


@pytest.mark.parametrize("name", ["cudnn-10.1-windows10-x64-v8.0.3.33.zip",
                                  "cudnn-v8.0.3.33_cuda10.1-windows10-x64.zip"],
                         ids=["nvidias-name", "a-mirrors-name"])
def test_an_input_with_the_releases_known_sha256_is_verified_by_hash_under_any_name(
        quickstart: Path, name: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """NVIDIA's real zip is login-only: the catalogue's record of it is replaced by one
    of the stand-in zip's sha256 (the data, not the code that matches it)."""
    _without_allow_unsigned(quickstart)
    given = next((quickstart.parent / "downloads").glob("*.zip"))
    renamed = given.rename(given.with_name(name))
    quickstart.write_text(quickstart.read_text().replace(given.name, renamed.name))
    sha256 = hashlib.sha256(renamed.read_bytes()).hexdigest()
    real = find_release(SEED)
    assert real is not None
    archive = dataclasses.replace(real.archives[0], sha256=sha256,
                                  sha256_source="third-party: a test's record")
    release = dataclasses.replace(real, archives=(archive,))
    monkeypatch.setattr(signatures, "find_release",
                        lambda wanted: release if wanted == SEED else None)
    code, out, err = run_cli(capsys, "pack", quickstart, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["inputs_trusted"]["cudnn"].startswith(
        f"verified by sha256 ({sha256[:12]}…): NVIDIA's cudnn-10.1-windows10-x64-v8.0.3.33.zip")
    assert "NOT SIGNED" not in out and summary["allowed_unsigned"] == []
    # The same input one byte off climbs no rung: refused.
    data = bytearray(renamed.read_bytes())
    data[-1] ^= 1   # the end record's comment length: still a zip, another sha256
    renamed.write_bytes(bytes(data) + b"\0")
    code, _, err = run_cli(capsys, "pack", quickstart)
    assert code == 2 and "must be signed by 'NVIDIA Corporation'" in err


def test_a_warm_pack_from_the_store_says_what_a_cold_one_says(
        quickstart: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "pack", quickstart, "--json")
    assert code == 0, err
    cold = json.loads(out)
    shutil.rmtree(quickstart.parent / "dist")   # the next pack takes the store's files
    code, out, err = run_cli(capsys, "pack", quickstart, "--json")
    assert code == 0, err
    warm = json.loads(out)
    assert warm["runtime_origin"]["files"].get("store", 0) > 0
    assert warm["inputs_trusted"] == cold["inputs_trusted"]
    assert warm["inputs_trusted"]["cudnn"].startswith("NOT SIGNED")


def test_the_trust_line_says_signed_only_when_this_pack_verified_the_signatures(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same recipe (a folder source NVIDIA signs), once with NVIDIA's real signed DLL
    and once with its signature stripped and allowed: the line follows the check."""
    from tests.harness.signing import nvidia_signed_dll, require_signing_tools, strip_signature
    from tests.integration.test_signatures import G4, _workspace

    require_signing_tools()
    real = nvidia_signed_dll(tmp_path / "nvidia")
    code, out, err = run_cli(capsys, "pack", _workspace(tmp_path / "signed", real,
                                                        "NVIDIA Corporation", (G4,)), "--json")
    assert code == 0, err
    assert json.loads(out)["inputs_trusted"]["lib"] == (
        "1 file(s) verified by NVIDIA Corporation's signature")
    stripped = strip_signature(real, tmp_path / "stripped.dll")
    spec = _workspace(tmp_path / "stripped", stripped, "NVIDIA Corporation", (G4,),
                      allow='allow_unsigned = ["*.dll"]')
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    said = json.loads(out)["inputs_trusted"]["lib"]
    assert said.startswith("NOT SIGNED: not NVIDIA's published file: 1 file(s) without")
    assert "verified by" not in said


def test_recipes_shows_the_ladder_a_pack_applies(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "recipes", SEED)
    assert code == 0
    line = next(text for text in out.splitlines() if text.startswith("  source cudnn:"))
    assert "verified by sha256 when it is NVIDIA's cudnn-10.1-windows10-x64-v8.0.3.33.zip " \
           "(sha256 recorded by a third party" in line
    assert line.endswith("else each DLL must carry NVIDIA Corporation's signature; else "
                         "refused unless allow_unsigned names the files")
