"""Up to date rests on what was read (issue 41): a link's target, the home folder a `~`
means, the shipped recipe families, bundler's dependencies, the site-packages the
one-copy check examines, an app changed while the pack ran, a bundle moved and linked
back. Each of these once answered "up to date" over a change; now the pack runs in
full and says why. Real packs of the stand-in runtime through the command line."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from bundler.frameworks import environment as python_environment
from bundler.pack import fresh_stamps, pipeline, up_to_date
from bundler.recipe import folders, load
from tests.harness.packing import Workspace, run_cli


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def pack_json(capsys: pytest.CaptureFixture[str], workspace: Workspace, *more: object
              ) -> tuple[dict[str, object], str]:
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--json", *more)
    assert code == 0, err
    summary: dict[str, object] = json.loads(out)
    return summary, err


def set_source(workspace: Workspace, sid: str, value: str) -> None:
    lines = [f'{sid} = "{value}"' if line.startswith(f"{sid} = ") else line
             for line in workspace.spec.read_text().splitlines()]
    workspace.spec.write_text("\n".join(lines) + "\n")


def source_of(workspace: Workspace, sid: str) -> Path:
    line = next(line for line in workspace.spec.read_text().splitlines()
                if line.startswith(f"{sid} = "))
    return Path(line.split('"')[1])


def test_a_full_pack_says_why_in_one_line_and_in_json(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    first, err = pack_json(capsys, workspace)
    assert first["packed_in_full_because"] == "no earlier pack of this spec is recorded"
    assert "bundler: packing in full: no earlier pack of this spec is recorded" in err
    again, _ = pack_json(capsys, workspace)
    assert again["up_to_date"] is True and again["packed_in_full_because"] is None
    entry = workspace.root / "app" / "main.py"
    entry.write_text(entry.read_text() + "# edited\n")
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert err.count("packing in full") == 1
    assert "bundler: packing in full: app/main.py changed since the last pack\n" in err
    edited, _ = pack_json(capsys, workspace, "--recheck")
    assert edited["packed_in_full_because"] == "--recheck packs in full"


def test_a_toolkit_file_that_links_elsewhere_is_stamped_by_its_target(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A toolkit file that is a link to a file elsewhere: an edit of the target is seen
    (and by --update-lock too, which does not change the record's name)."""
    toolkit = tmp_path / "toolkit"
    shutil.copytree(source_of(workspace, "cuda"), toolkit)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    linked = next(p for p in sorted(toolkit.rglob("*.dll")))
    shutil.move(linked, elsewhere / linked.name)
    linked.symlink_to(elsewhere / linked.name)
    set_source(workspace, "cuda", toolkit.as_posix())
    pack_json(capsys, workspace)
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True
    target = elsewhere / linked.name
    for more in ((), ("--update-lock",)):
        facts = target.stat()
        with open(target, "r+b") as out:   # one byte, size and modification time kept
            out.seek(facts.st_size - 1)
            last = out.read(1)
            out.seek(facts.st_size - 1)
            out.write(b"\x01" if last != b"\x01" else b"\x02")
        os.utime(target, ns=(facts.st_atime_ns, facts.st_mtime_ns))
        code, out, err = run_cli(capsys, "pack", workspace.spec, *more)
        assert not out.startswith("up to date"), more
        if more:   # the lock follows the input: packed, and said why in full
            assert code == 0, err
            assert "what the link points to changed since the last pack" in err
        else:      # the full pack read the edited bytes: not as locked
            assert code != 0 and "source cuda changed" in err, err


def test_a_source_under_another_home_is_another_pack(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    zipped = source_of(workspace, "cudnn")
    homes = [tmp_path / "home-a", tmp_path / "home-b"]
    for home in homes:
        home.mkdir()
        shutil.copyfile(zipped, home / "cudnn.zip")
    set_source(workspace, "cudnn", "~/cudnn.zip")
    monkeypatch.setenv("HOME", str(homes[0]))
    pack_json(capsys, workspace)
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True
    monkeypatch.setenv("HOME", str(homes[1]))
    again, err = pack_json(capsys, workspace)
    assert again["up_to_date"] is False
    assert again["packed_in_full_because"] == \
        "where an input's path leads (a `~`, a link) changed since the last pack"


def test_an_edited_family_file_of_the_shipped_recipes_is_a_change(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped recipes and their families (beside the package in a checkout or an
    editable install: outside bundler's own folder) are what the recipe is read from."""
    recipes = tmp_path / "recipes"
    shutil.copytree(folders.shipped_recipe_dir(), recipes)
    for module in (folders, load, pipeline):
        monkeypatch.setattr(module, "shipped_recipe_dir", lambda: recipes)
    pack_json(capsys, workspace)
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True
    family = next(sorted((recipes / "families").glob("*.toml")).__iter__())
    family.write_text(family.read_text() + "# edited\n")
    again, _ = pack_json(capsys, workspace)
    assert again["up_to_date"] is False
    assert f"families/{family.name} changed" in str(again["packed_in_full_because"])


def test_bundlers_dependencies_count(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Another version of a dependency, or an edit of its installed files."""
    module = tmp_path / "site" / "pefile.py"
    module.parent.mkdir()
    module.write_text("# pefile\n")
    monkeypatch.setattr(pipeline, "own_dependencies", lambda: ([module], []))
    pack_json(capsys, workspace)
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True
    module.write_text("# pefile, edited\n")
    again, _ = pack_json(capsys, workspace)
    assert again["up_to_date"] is False
    assert "pefile.py changed" in str(again["packed_in_full_because"])
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True
    versions = {**fresh_stamps.dependencies(), "pefile": "1999.1.1"}
    monkeypatch.setattr(up_to_date, "dependencies", lambda: versions)
    again, _ = pack_json(capsys, workspace)
    assert again["packed_in_full_because"] == "the installed pefile changed since the last pack"


def test_a_wheel_added_to_the_examined_environment_is_a_change(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "venv" / "site-packages"
    (site / "numpy").mkdir(parents=True)
    monkeypatch.setattr(python_environment, "interpreter_site_packages", lambda: (site,))
    pack_json(capsys, workspace)
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True
    (site / "nvidia_cudnn_cu13-9.13.0.50.dist-info").mkdir()
    again, _ = pack_json(capsys, workspace)
    assert again["up_to_date"] is False
    assert "nvidia_cudnn_cu13-9.13.0.50.dist-info appeared" in str(
        again["packed_in_full_because"])


def test_an_app_file_deleted_while_the_pack_ran_is_not_recorded(
        workspace: Workspace, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The bundle holds the file the app no longer has: that pack keeps no record, so
    the next one packs in full and ships the app as it is."""
    extra = workspace.root / "app" / "extra.txt"
    extra.write_text("soon gone\n")
    written = pipeline.write_manifest

    def deleting(*args: object) -> None:
        written(*args)   # type: ignore[arg-type]
        extra.unlink(missing_ok=True)

    monkeypatch.setattr(pipeline, "write_manifest", deleting)
    first, _ = pack_json(capsys, workspace)
    assert (Path(str(first["out"])) / "extra.txt").is_file()   # copied before it went
    monkeypatch.undo()
    again, _ = pack_json(capsys, workspace)
    assert again["up_to_date"] is False
    assert not (Path(str(again["out"])) / "extra.txt").exists()
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True


def test_a_bundle_moved_and_linked_back_is_refused_as_a_full_pack_refuses_it(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, _ = pack_json(capsys, workspace)
    bundle = Path(str(first["out"]))
    moved = tmp_path / "moved"
    shutil.move(bundle, moved)
    bundle.symlink_to(moved, target_is_directory=True)
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert not out.startswith("up to date")
    assert code != 0, out


def test_a_second_app_sharing_the_store_packed_and_deleted_keeps_up_to_date(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its links to the same store objects change their change time and link count,
    not their bytes: still up to date, and without reading them again where the store
    recorded the stamps the other pack left."""
    pack_json(capsys, workspace)
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True
    other = tmp_path / "other"
    shutil.copytree(workspace.root, other, ignore=shutil.ignore_patterns("dist", "*.lock"))
    second = Workspace(other, other / "app.spec")
    made, _ = pack_json(capsys, second)
    assert made["runtime_origin"]["files"] == {"store": 3} or \
        "store" in made["runtime_origin"]["files"]   # type: ignore[index,operator]
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True   # after its pack
    shutil.rmtree(other)
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True   # after its removal


def test_a_byte_changed_through_a_store_link_is_a_change(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """Written through the store's name for the object (the bundle's file is the same
    inode), its size and modification time put back: only the bytes tell, and the
    store's record of the object no longer holds, so it is read: a full pack."""
    first, _ = pack_json(capsys, workspace)
    entry = next(e for e in first["files"])   # type: ignore[attr-defined]
    store = Path(os.environ["BUNDLER_STORE"])
    stored = store / "objects" / entry["sha256"][:2] / entry["sha256"]
    bundled = Path(str(first["out"])) / entry["path"]
    assert stored.stat().st_ino == bundled.stat().st_ino
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True
    pack_json(capsys, workspace, "--recheck")   # the store records what it hashed
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True
    facts = stored.stat()
    stored.chmod(0o644)
    with open(stored, "r+b") as out:
        out.write(b"\x00" if out.read(1) != b"\x00" else b"\x01")
    stored.chmod(facts.st_mode & 0o777)
    os.utime(stored, ns=(facts.st_atime_ns, facts.st_mtime_ns))
    again, _ = pack_json(capsys, workspace)
    assert again["up_to_date"] is False
    assert str(again["packed_in_full_because"]).endswith("changed since the last pack")
    code, out, err = run_cli(capsys, "verify", again["out"])
    assert code == 0, out + err


def test_a_locked_pack_that_kept_a_lock_the_next_pack_rewrites_is_not_recorded(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """--locked writes no lock: one that holds what this pack pins in another form (a
    blank line) is kept, and the next pack without --locked rewrites it: that pack, not
    the --locked one, is the state to call up to date."""
    pack_json(capsys, workspace)
    lock = workspace.spec.with_name("app.spec.lock")
    written = lock.read_text()
    lock.write_text(written.replace("\n", "\n\n", 1))
    assert pack_json(capsys, workspace, "--locked")[0]["up_to_date"] is False
    assert lock.read_text() != written   # kept as it was
    again, _ = pack_json(capsys, workspace)
    assert again["up_to_date"] is False
    assert lock.read_text() == written
    assert pack_json(capsys, workspace)[0]["up_to_date"] is True


def test_an_input_deleted_while_the_pack_ran_is_not_recorded(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The cuDNN zip removed once read: the next pack is not "up to date" from the record
    of a bundle made from an input that is gone; it refuses, naming the input (inputs
    are resolved before any record is looked up, so no record is needed for this)."""
    zipped = tmp_path / "cudnn.zip"
    shutil.copyfile(source_of(workspace, "cudnn"), zipped)
    set_source(workspace, "cudnn", zipped.as_posix())
    written = pipeline.write_manifest

    def deleting(*args: object) -> None:
        written(*args)   # type: ignore[arg-type]
        zipped.unlink(missing_ok=True)

    monkeypatch.setattr(pipeline, "write_manifest", deleting)
    pack_json(capsys, workspace)
    monkeypatch.undo()
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert not out.startswith("up to date")
    assert code != 0 and str(zipped) in err, err
