"""The lock follows the spec (cargo, uv): a spec change updates it and the pack says
what changed; a changed input under an unchanged spec is refused; --locked refuses any
change; a format-1 lock (no spec record) is still read. Real packs of the stand-in
runtime, through the command line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bundler.errors import BundlerError
from bundler.formats.lockfile import Lock
from bundler.pack.lock import check_lock
from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.harness.packing import Workspace, run_cli, snapshot
from tests.harness.winenv.build import build_dll, cudart_spec, make_toolkit


@pytest.fixture
def workspace(packed_workspace: Workspace) -> Workspace:
    return packed_workspace


def _lock(workspace: Workspace) -> dict:
    return json.loads(workspace.spec.with_name("app.spec.lock").read_text())


def _set_components(workspace: Workspace, components: str) -> None:
    text = workspace.spec.read_text()
    workspace.spec.write_text(text.replace("[runtime]\n", f"[runtime]\ncomponents = "
                                           f"{components}\n", 1))


def _rebuilt_toolkit(standin_runtime, tmp_path: Path) -> Path:
    """The stand-in toolkit with another build of cudart64_101.dll in it."""
    toolkit = make_toolkit(standin_runtime.dir, tmp_path / "v10.1")
    rebuilt = build_dll(cudart_spec(version=(6, 14, 11, 10099)), tmp_path / "rebuilt")
    shutil.copy(rebuilt, toolkit / "bin" / "cudart64_101.dll")
    return toolkit


def test_a_spec_change_updates_the_lock_and_says_what_changed(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    before = _lock(workspace)
    assert before["format"] == 2 and "adv_train" in before["components"]
    assert before["spec"]["runtime"]["recipe"] == "cudnn-8.0.3.33-cuda10.1-win-x64"
    _set_components(workspace, '["cnn_infer"]')
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    line = next(text for text in out.splitlines() if "lock:" in text)
    assert "updated: spec runtime.components added" in line
    assert "component adv_train removed" in line and "file(s) removed" in line
    after = _lock(workspace)
    assert "adv_train" not in after["components"] and "cnn_infer" in after["components"]
    assert after["spec"]["runtime"]["components"] == ["cnn_infer"]
    assert not any("adv_train" in path for path in after["files"])
    assert "cudnn/cudnn_adv_train64_8.dll" not in snapshot(workspace.dist)
    # The same spec again: nothing to update, nothing said.
    code, out, _ = run_cli(capsys, "pack", workspace.spec)
    assert code == 0 and "updated:" not in out and _lock(workspace) == after
    # --json says it too, as one document.
    workspace.spec.write_text(workspace.spec.read_text().replace('["cnn_infer"]',
                                                                 '["adv_train"]'))
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--json")
    assert code == 0, err
    changes = json.loads(out)["lock_changes"]
    assert changes[0] == "spec runtime.components changed"
    assert "component adv_train added" in changes and "component cnn_train added" not in changes


def test_a_changed_input_is_refused_even_with_a_spec_change(
        workspace: Workspace, standin_runtime, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    toolkit = _rebuilt_toolkit(standin_runtime, tmp_path)
    _set_components(workspace, '["cnn_infer"]')
    before = snapshot(workspace.root)
    # The spec still gives cuda from the same place; --source reads another cudart.
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--source", f"cuda={toolkit}")
    assert code == 2
    assert "file cudnn/cudart64_101.dll changed (source cuda)" in err
    assert "--update-lock" in err
    assert snapshot(workspace.root) == before
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--source", f"cuda={toolkit}",
                           "--update-lock")
    assert code == 0, err
    assert _lock(workspace)["files"]["cudnn/cudart64_101.dll"] == snapshot(toolkit)[
        "bin/cudart64_101.dll"]


def test_a_source_the_spec_moves_is_a_spec_change(
        workspace: Workspace, standin_runtime, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    toolkit = _rebuilt_toolkit(standin_runtime, tmp_path)
    text = workspace.spec.read_text()
    old_line = next(line for line in text.splitlines() if line.startswith("cuda = "))
    workspace.spec.write_text(text.replace(old_line, f'cuda = "{toolkit.as_posix()}"'))
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert "spec sources.cuda changed" in out and "source cuda changed" in out
    assert _lock(workspace)["files"]["cudnn/cudart64_101.dll"] == snapshot(toolkit)[
        "bin/cudart64_101.dll"]


def test_locked_refuses_a_spec_change_an_input_change_and_a_missing_lock(
        workspace: Workspace, standin_runtime, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    lock_path = workspace.spec.with_name("app.spec.lock")
    lock_bytes = lock_path.read_bytes()
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--locked")
    assert code == 0, err    # nothing changes: --locked packs
    assert lock_path.read_bytes() == lock_bytes and "updated:" not in out
    before = snapshot(workspace.root)
    toolkit = _rebuilt_toolkit(standin_runtime, tmp_path)
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--locked",
                           "--source", f"cuda={toolkit}")
    assert code == 2 and "--locked, but the lock would change" in err
    assert "file cudnn/cudart64_101.dll changed" in err
    _set_components(workspace, '["cnn_infer"]')
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--locked")
    assert code == 2 and "spec runtime.components added" in err
    assert "component adv_train removed" in err
    workspace.spec.write_text(workspace.spec.read_text().replace(
        'components = ["cnn_infer"]\n', ""))
    assert snapshot(workspace.root) == before    # neither bundle nor lock touched
    lock_path.unlink()
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--locked")
    assert code == 2 and "no lock yet" in err and not lock_path.exists()


def test_locked_with_update_lock_is_a_usage_error(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run_cli(capsys, "pack", workspace.spec, "--locked", "--update-lock")
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(BundlerError, match="contradict"):
        pack(load_spec(workspace.spec), locked=True, update_lock=True)


def _as_format_1(workspace: Workspace) -> bytes:
    """The lock as bundler wrote it before it recorded the spec."""
    old = _lock(workspace)
    data = {"format": 1, "recipe": old["recipe"], "sources": old["sources"],
            "files": old["files"]}
    raw = (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
    workspace.spec.with_name("app.spec.lock").write_bytes(raw)
    return raw


def test_a_format_1_lock_is_read_checked_and_upgraded(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    lock_path = workspace.spec.with_name("app.spec.lock")
    raw = _as_format_1(workspace)
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--locked")
    # --locked never rewrites, even to upgrade; nor keeps a lock that pins less than the
    # pack found (no bundle record: the manifest and entry script unpinned)
    assert code == 2 and "--locked, but the lock has no bundle record" in err, err
    assert lock_path.read_bytes() == raw
    # Without the record, a change is refused as before: which spec made it is unknown.
    _set_components(workspace, '["cnn_infer"]')
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2 and "differ from the lock" in err and "--update-lock" in err
    assert lock_path.read_bytes() == raw
    workspace.spec.write_text(workspace.spec.read_text().replace(
        'components = ["cnn_infer"]\n', ""))
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert "format 1 -> 2" in out
    upgraded = _lock(workspace)
    assert upgraded["format"] == 2 and upgraded["spec"]["app"]["name"] == "app"


def test_under_a_spec_change_an_edited_recipe_of_the_same_spec_value_is_refused(
        tmp_path: Path) -> None:
    """The rule below the command line: what the spec change does not explain."""
    path = tmp_path / "app.spec.lock"
    spec = {"app": {"name": "app"}, "runtime": {"recipe": "r"}, "sources": {"cuda": "a"}}
    old = Lock(recipe={"name": "r", "sha256": "1"}, sources={}, spec=spec,
               components=["core"], files={"cudnn/x.dll": "1", "cudnn/y.dll": "2"})
    path.write_bytes(old.to_bytes())
    renamed = {**spec, "app": {"name": "app2"}}
    edited = Lock(recipe={"name": "r", "sha256": "2"}, sources={}, spec=renamed,
                  components=["core"], files=old.files)
    with pytest.raises(BundlerError, match="recipe r file changed"):
        check_lock(path, edited, "follow")
    # Another recipe named by the spec: every file may differ.
    other = {**spec, "runtime": {"recipe": "s"}}
    switched = Lock(recipe={"name": "s", "sha256": "9"}, sources={}, spec=other,
                    components=["core", "cufft"], files={"cudnn/x.dll": "7"})
    settled = check_lock(path, switched, "follow")
    assert settled.changes == ("spec runtime.recipe changed", "recipe r -> s",
                               "component cufft added", "1 file(s) changed",
                               "1 file(s) removed")
    # A file of a source the spec gives as before, with other contents: refused.
    changed = Lock(recipe=old.recipe, sources={}, spec=renamed, components=["core"],
                   files={"cudnn/x.dll": "1", "cudnn/y.dll": "3"})
    with pytest.raises(BundlerError, match=r"file cudnn/y.dll changed \(source cuda\)"):
        check_lock(path, changed, "follow", {"cudnn/y.dll": "cuda"})
