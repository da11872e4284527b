"""Authenticode at pack, verify, doctor and inspect, on a real NVIDIA-signed DLL
(cudart64_13.dll from the pinned nvidia-cuda-runtime 13.5.37 wheel) and on stand-ins
signed by a test CA made at test time. No mocks: real files, openssl, osslsigncode."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from bundler.diagnose.doctor import examine_machine
from bundler.targets.registry import windows
from bundler.windows.authenticode import (
    CHANGED,
    OK,
    UNKNOWN_CHAIN,
    UNSIGNED,
    Trust,
    check_signature,
)
from tests.harness.packing import run_cli
from tests.harness.signing import (
    TEST_SIGNER,
    flip_byte,
    make_test_ca,
    nvidia_signed_dll,
    require_signing_tools,
    self_signed,
    strip_signature,
)

G4 = "552f7bdcf1a7af9e6ce672017f4f12abf77240c78e761ac203d1d9d20ac89988"
NVIDIA = Trust("NVIDIA Corporation", (G4,))
STANDIN = Path(__file__).resolve().parents[2] / "examples/quickstart/standin-cuda/v10.1/bin"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_signing_tools()
    return nvidia_signed_dll(tmp_path_factory.mktemp("nvidia"))


def test_a_real_nvidia_dll_is_accepted(real: Path) -> None:
    found = check_signature(real, NVIDIA)
    assert (found.status, found.signer) == (OK, "NVIDIA Corporation")
    assert found.signed_at == "2026-10-13T03:18:26Z" and found.root == G4


def test_a_flipped_byte_is_changed_after_signing(real: Path, tmp_path: Path) -> None:
    assert check_signature(flip_byte(real, tmp_path / "x.dll"), NVIDIA).status == CHANGED


def test_a_stripped_signature_is_unsigned(real: Path, tmp_path: Path) -> None:
    assert check_signature(strip_signature(real, tmp_path / "x.dll"), NVIDIA).status == UNSIGNED


def test_resigned_by_a_self_made_nvidia_certificate_reaches_no_pinned_root(
        real: Path, tmp_path: Path) -> None:
    stripped = strip_signature(real, tmp_path / "stripped.dll")
    fake = self_signed(tmp_path / "pki").sign(stripped, tmp_path / "fake.dll")
    found = check_signature(fake, NVIDIA)
    assert (found.status, found.signer) == (UNKNOWN_CHAIN, "NVIDIA Corporation")


def test_no_pinned_root_trusts_nothing_not_microsofts_store(real: Path) -> None:
    """signify swaps in Microsoft's root list for a missing store; ours is never missing."""
    assert check_signature(real, Trust("NVIDIA Corporation", ())).status == UNKNOWN_CHAIN


def test_the_signer_name_must_match(real: Path) -> None:
    found = check_signature(real, Trust("Someone Else", (G4,)))
    assert (found.status, found.signer) == ("unexpected-signer", "NVIDIA Corporation")


def _recipe(root: Path, signer: str, pins: tuple[str, ...]) -> None:
    roots = ", ".join(f'"{pin}"' for pin in pins)
    (root / "signed.toml").write_text(textwrap.dedent(f'''\
        name = "signed"
        platform = "win-amd64"
        [versions]
        cudnn = "9.0.0.0"
        cuda = "12.9.1"
        [signers."{signer}"]
        roots = [{roots}]
        [sources.lib]
        kind = "folder"
        signed_by = "{signer}"
        [components.core]
        files = ["lib:bin/{DLL}"]
        '''))


DLL = "cudart64_13.dll"


def _workspace(root: Path, dll: Path, signer: str, pins: tuple[str, ...],
               allow: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    _recipe(root, signer, pins)
    (root / "app").mkdir(parents=True, exist_ok=True)
    (root / "lib" / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy(dll, root / "lib" / "bin" / DLL)
    spec = root / "app.spec"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\n[runtime]\nrecipe = "signed.toml"\n'
                    f'{allow}\n[sources]\nlib = "lib"\n')
    return spec


def _manifest(root: Path) -> dict:
    return json.loads((root / "dist/app/cudnn/manifest.json").read_text())


def test_pack_records_the_signer_and_time(real: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "pack", _workspace(tmp_path, real, "NVIDIA Corporation",
                                                        (G4,)))
    assert code == 0, err
    entry = _manifest(tmp_path)["files"][0]
    assert (entry["signature"], entry["signer"], entry["signed_at"], entry["signature_root"]) \
        == ("verified", "NVIDIA Corporation", "2026-10-13T03:18:26Z", G4)
    assert "signed by NVIDIA Corporation, timestamp 2026-10-13T03:18:26Z" in out


@pytest.mark.parametrize("damage, says", [
    ("flip", "changed after signing"), ("strip", "not signed"),
    ("self-signed", "signature does not chain to a pinned root")])
def test_pack_refuses_a_file_that_is_not_nvidias(
        real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str,
        says: str) -> None:
    bad = tmp_path / "bad.dll"
    if damage == "flip":
        flip_byte(real, bad)
    elif damage == "strip":
        strip_signature(real, bad)
    else:
        self_signed(tmp_path / "pki").sign(strip_signature(real, tmp_path / "s.dll"), bad)
    code, _, err = run_cli(capsys, "pack", _workspace(tmp_path / "w", bad,
                                                      "NVIDIA Corporation", (G4,)))
    assert code == 2
    assert f"{tmp_path / 'w' / 'lib'}: {DLL} must be signed by 'NVIDIA Corporation', but is " \
           f"{says}" in err
    assert "hint: the source is not the original from NVIDIA Corporation: download it " \
           "again from NVIDIA Corporation" in err
    assert not (tmp_path / "w" / "dist" / "app").exists()


def test_allow_unsigned_accepts_a_named_unsigned_file_but_never_a_changed_one(
        real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    allow = 'allow_unsigned = ["CUDART*.dll"]'
    spec = _workspace(tmp_path / "a", strip_signature(real, tmp_path / "s.dll"),
                      "NVIDIA Corporation", (G4,), allow)
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    assert _manifest(tmp_path / "a")["files"][0]["signature"] == "allowed-unsigned"
    assert "NOT SIGNED: 1 files lack the signature" in out and "stand-in" in out
    spec = _workspace(tmp_path / "b", flip_byte(real, tmp_path / "f.dll"),
                      "NVIDIA Corporation", (G4,), allow)
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2 and "changed after signing" in err


def test_a_test_ca_is_trusted_only_when_the_recipe_pins_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_signing_tools()
    ca = make_test_ca(tmp_path / "pki")
    signed = ca.sign(STANDIN / "cudart64_101.dll", tmp_path / "signed.dll")
    code, _, err = run_cli(capsys, "pack", _workspace(tmp_path / "pinned", signed, TEST_SIGNER,
                                                      (ca.root_sha256,)))
    assert code == 0, err
    assert _manifest(tmp_path / "pinned")["files"][0]["signer"] == TEST_SIGNER
    code, _, err = run_cli(capsys, "pack", _workspace(tmp_path / "not", signed, TEST_SIGNER,
                                                      (G4,)))
    assert code == 2 and "signature does not chain to a pinned root" in err


def _swap_for_unsigned(root: Path, unsigned: Path) -> None:
    """Replace the bundled DLL and edit the manifest's hash and size to match."""
    import hashlib

    target = root / "dist/app/cudnn" / DLL
    shutil.copy(unsigned, target)
    path = root / "dist/app/cudnn/manifest.json"
    data = json.loads(path.read_text())
    data["files"][0].update(sha256=hashlib.sha256(unsigned.read_bytes()).hexdigest(),
                            size=unsigned.stat().st_size)
    path.write_text(json.dumps(data))


def test_verify_and_doctor_catch_a_swapped_dll_with_an_edited_manifest(
        real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "pack", _workspace(tmp_path, real, "NVIDIA Corporation",
                                              (G4,)))[0] == 0
    code, out, _ = run_cli(capsys, "verify", tmp_path / "dist/app")
    assert code == 0 and "1 signatures valid" in out
    _swap_for_unsigned(tmp_path, strip_signature(real, tmp_path / "unsigned.dll"))
    code, out, _ = run_cli(capsys, "verify", tmp_path / "dist/app")
    assert code == 1
    assert f"signature: cudnn/{DLL}: pack found it signed by 'NVIDIA Corporation', now it " \
           "is not signed" in out
    code, out, _ = run_cli(capsys, "doctor", tmp_path / "dist/app")
    assert code == 1 and "signature not valid" in out


def test_doctor_finds_an_unsigned_cudnn_on_path(tmp_path: Path, real: Path) -> None:
    (tmp_path / "bin").mkdir()
    shutil.copy(STANDIN / "cudart64_101.dll", tmp_path / "bin" / "cudnn64_8.dll")
    shutil.copy(real, tmp_path / "bin" / DLL)
    report = examine_machine(windows(), {"PATH": str(tmp_path / "bin")})
    problems = [f.message for f in report.findings if f.about == "signature"]
    assert problems == [f"cudnn64_8.dll in {tmp_path / 'bin' / 'cudnn64_8.dll'} (PATH[1], version "
                        "6.14.11.10010): "
                        "must be signed by 'NVIDIA Corporation', but is not signed: no "
                        "Authenticode signature"]
    statuses = {p.copy.name: p.copy.signature for p in report.libraries}
    assert statuses["cudnn64_8.dll"] == UNSIGNED


def test_inspect_shows_signer_timestamp_and_status(
        real: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "inspect", real)
    assert code == 0
    assert "signature        ok: signed by 'NVIDIA Corporation', timestamp " \
           "2026-10-13T03:18:26Z" in out
    code, out, _ = run_cli(capsys, "inspect", flip_byte(real, tmp_path / "x.dll"))
    assert "signature        changed: changed after signing" in out


def test_a_warm_pack_reuses_a_passed_check_of_the_same_bytes(
        real: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A timestamped signature that passed for these bytes (by sha256) passes again:
    the store keeps the verdict, and a re-pack does not pay for the check twice."""
    from bundler.windows import authenticode

    spec = _workspace(tmp_path, real, "NVIDIA Corporation", (G4,))
    assert run_cli(capsys, "pack", spec)[0] == 0
    calls: list[Path] = []
    real_check = authenticode.check_signature
    monkeypatch.setattr(authenticode, "check_signature",
                        lambda path, trust: calls.append(path) or real_check(path, trust))
    (tmp_path / "app" / "main.py").write_text("print('changed')\n")
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    assert calls == []
    assert _manifest(tmp_path)["files"][0]["signer"] == "NVIDIA Corporation"
    # Another trust (another pinned root set) is checked afresh, and fails.
    _recipe(tmp_path, "NVIDIA Corporation", ("0" * 64,))
    code, _, err = run_cli(capsys, "pack", spec, "--update-lock")
    assert code == 2 and "pinned root" in err and calls
