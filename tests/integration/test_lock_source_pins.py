"""A spec change must not carry a changed input file past the lock.

The lock follows the spec (tests/integration/test_lock_conventions.py), but an archive or wheel the
spec still gives the same way is pinned by its own sha256: if that file was replaced,
the pack is refused whatever else the spec changed, as it is under an unchanged spec.
Otherwise any edit of the spec (a component added) would let a swapped archive in,
with a DLL no lock ever pinned. Real packs of the stand-in runtime."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from bundler.formats.lockfile import Lock
from bundler.pack.lock import check_lock
from tests.harness.packing import Workspace, make_workspace, run_cli, snapshot
from tests.harness.winenv.build import build_dll, cudnn_sublib_spec, make_nvidia_zip


def _swapped_archive(standin_runtime, tmp_path: Path, out: Path) -> None:
    """The stand-in cuDNN zip with another build of the adv_train sub-library: a valid
    DLL every pack-time check accepts. It stays the recipe's release (8.0.3.33) and
    differs in its description only: a FileVersion naming another release is refused
    by the release-evidence check (issue 28) before the lock is compared, and this
    test is about the lock."""
    dlls = tmp_path / "swapped-dlls"
    shutil.copytree(standin_runtime.dir, dlls)
    spec = cudnn_sublib_spec("adv_train", standin_runtime.cudnn_version)
    other = build_dll(replace(spec, description=spec.description + " (another build)"),
                      tmp_path / "other")
    assert other.read_bytes() != (dlls / other.name).read_bytes()
    shutil.copy(other, dlls / other.name)
    make_nvidia_zip(dlls, out, "deflate")


@pytest.fixture
def workspace(tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
              standin_framework: Path, capsys: pytest.CaptureFixture[str]) -> Workspace:
    """Packed with the cnn_infer components only (adv_train not selected), from an
    archive of the workspace's own that the test may replace."""
    archive = tmp_path / "downloads" / standin_zip.name
    archive.parent.mkdir()
    shutil.copy(standin_zip, archive)
    made = make_workspace(tmp_path / "ws", standin_framework,
                          {"cudnn": archive, "cuda": standin_toolkit},
                          extra_runtime='components = ["cnn_infer"]\n')
    code, _, err = run_cli(capsys, "pack", made.spec)
    assert code == 0, err
    return made


def _archive(workspace: Workspace) -> Path:
    sources = json.loads(workspace.spec.with_name("app.spec.lock").read_text())["spec"]
    return Path(sources["sources"]["cudnn"])


def test_a_replaced_archive_is_refused_even_when_the_spec_adds_a_component(
        workspace: Workspace, standin_runtime, standin_zip: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _swapped_archive(standin_runtime, tmp_path, _archive(workspace))
    code, _, err = run_cli(capsys, "pack", workspace.spec)   # the same spec: refused
    assert code == 2 and "source cudnn changed" in err
    spec_text = workspace.spec.read_text()
    workspace.spec.write_text(spec_text.replace('["cnn_infer"]', '["cnn_infer", "adv_train"]'))
    before = snapshot(workspace.root)
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2, "a spec change let a replaced archive in"
    assert "source cudnn changed" in err and "--update-lock" in err
    assert snapshot(workspace.root) == before   # no bundle, no lock changed
    # Accepted when the user says so.
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--update-lock")
    assert code == 0, err
    assert "component adv_train added" in out
    # and when the spec itself names another file, the lock follows it unasked
    workspace.spec.write_text(workspace.spec.read_text().replace(
        _archive(workspace).as_posix(), standin_zip.as_posix()))
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert "spec sources.cudnn changed" in out and "source cudnn changed" in out


def test_an_archive_pin_holds_under_an_unrelated_spec_change(tmp_path: Path) -> None:
    """Below the command line: a spec change elsewhere (a driver check switched on) with
    an archive whose sha256 moved and whose shipped files did not (the replaced archive
    differs in a member not shipped) is an input change; a toolkit folder's identity,
    taken over the files a selection takes, may move with the selection."""
    path = tmp_path / "app.spec.lock"
    spec = {"runtime": {"recipe": "r"}, "sources": {"cudnn": "c.zip", "cuda": "v10.1"}}
    sources = {"cudnn": {"kind": "archive", "sha256": "a"},
               "cuda": {"kind": "toolkit", "sha256": "t"}}
    old = Lock(recipe={"name": "r", "sha256": "1"}, sources=sources, spec=spec,
               components=["core"], files={"cudnn/x.dll": "1"})
    path.write_bytes(old.to_bytes())
    changed_spec = {**spec, "runtime": {"recipe": "r", "require_driver": True}}
    swapped = Lock(recipe=old.recipe, spec=changed_spec, components=["core"],
                   sources={**sources, "cudnn": {"kind": "archive", "sha256": "b"}},
                   files=old.files)
    with pytest.raises(Exception, match="source cudnn changed"):
        check_lock(path, swapped, "follow", {"cudnn/x.dll": "cudnn"})
    more = Lock(recipe=old.recipe, spec=changed_spec, components=["core", "cudart"],
                sources={**sources, "cuda": {"kind": "toolkit", "sha256": "u"}},
                files={**old.files, "cudnn/cudart64_101.dll": "2"})
    settled = check_lock(path, more, "follow", {"cudnn/x.dll": "cudnn",
                                                "cudnn/cudart64_101.dll": "cuda"})
    assert "component cudart added" in settled.changes


def test_a_format_1_lock_says_why_it_refuses_a_spec_change(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """A lock written before the spec record cannot follow the spec; the refusal says
    so, or the user meets the old behaviour with no reason given."""
    lock_path = workspace.spec.with_name("app.spec.lock")
    written = json.loads(lock_path.read_text())
    lock_path.write_text(json.dumps({"format": 1, **{key: written[key] for key in (
        "recipe", "sources", "files")}}))
    workspace.spec.write_text(workspace.spec.read_text().replace(
        '["cnn_infer"]', '["cnn_infer", "adv_train"]'))
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2 and "file cudnn/cudnn_adv_train64_8.dll added" in err
    assert "a format-1 lock: it does not record the spec" in err and "--update-lock" in err
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--update-lock")
    assert code == 0, err
    assert json.loads(lock_path.read_text())["format"] == 2
