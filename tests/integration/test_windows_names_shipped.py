"""Windows name rules over everything a Windows bundle ships (issue 28 item 6), the
embedded `python/` folder included: the folder builder holds the app's own files to
them, but the wheels app.requirements installs under python/Lib/site-packages shipped
`Mod.py` beside `mod.py`, `aux.py`, 280-character paths and U+202E names with exit 0
and verify said ok. Pack now asks the target platform (Platform.unholdable_path,
bundler/windows/shipped_names.py) about every path of the staged bundle before the swap.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.targets.registry import platform_for
from tests.harness.packing import run_cli
from tests.harness.wheelkit import make_wheel
from tests.integration.test_embedded_python import bundler_cache, embedded_workspace

# 256 characters, 281 with python/Lib/site-packages/ above it
LONG = "evil/" + "/".join(["d" * 60] * 4) + "/deep.py"
CASES = {
    "case-twins": (["evil/Mod.py", "evil/mod.py"], "differs from it only in case"),
    "aux": (["evil/aux.py"], "'aux' is a device name Windows reserves"),
    "con": (["evil/con.txt"], "'con' is a device name Windows reserves"),
    "nul": (["evil/data/nul"], "'nul' is a device name Windows reserves"),
    "com1": (["evil/com1.txt"], "'com1' is a device name Windows reserves"),
    "max-path": ([LONG], "characters long, and Windows paths are shorter than 260"),
    "trailing-dot": (["evil/notes."], "ends in a dot or a space"),
    "trailing-space": (["evil/notes "], "ends in a dot or a space"),
    "forbidden": (["evil/a<b>.py"], "which Windows does not allow in a name"),
    "control": (["evil/bell\x07.py"], "which Windows does not allow in a name"),
    "bidi": (["evil/gpj\u202eexe.py"], "bidirectional control U+202E"),
}

# Names with a control character: uv, resolving from the wheel itself, refuses them.
UV_REFUSES = ("control", "bidi")


def _evil_wheel(folder: Path, members: list[str]) -> Path:
    metadata = b"Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"
    files = {"evil/__init__.py": b"", **{m: b"x = 1\n" for m in members},
             "evil-1.0.dist-info/METADATA": metadata}
    return make_wheel(folder, files, name="evil", version="1.0")


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_wheel_whose_names_windows_cannot_hold_is_refused_naming_it(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, case: str
        ) -> None:
    members, why = CASES[case]
    spec = embedded_workspace(tmp_path, standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit})
    wheels = tmp_path / "wheels"
    _evil_wheel(wheels, members)
    (tmp_path / "requirements.txt").write_text(
        f"--no-index\n--find-links {wheels.as_posix()}\nevil==1.0\n")
    for key, value in bundler_cache(tmp_path / "cache").items():
        monkeypatch.setenv(key, value)
    dist = tmp_path / "dist"
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2, err
    assert not (dist / "demo").exists() and "Traceback" not in err
    if case in UV_REFUSES:   # the resolver (uv) reads the wheel and refuses it first
        assert "uv could not resolve the app's requirements" in err
        assert "Archive contains unacceptable filename: evil/" in err, err
        return
    assert "\nbundler: error: demo/python/Lib/site-packages/evil/" in err, err
    assert "Windows cannot hold this path in the bundle: " in err and why in err, err
    assert "the wheel evil 1.0 installs it (app.requirements)" in err
    assert "\nhint: pin another version of evil" in err


def test_linux_holds_what_windows_cannot() -> None:
    names = [m for members, _ in CASES.values() for m in members]
    assert platform_for("linux-x86_64").unholdable_path(names) is None
    assert platform_for("win-amd64").unholdable_path(["a/b.py", "a/B.txt"]) is None
