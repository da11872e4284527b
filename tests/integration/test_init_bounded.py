"""`bundler init` writes a spec pack's reader takes, however many libraries the app
names (issue 42, #21): an app naming 3,000 libraries no release ships made init write a
spec over the 1 MiB a spec may be, which init then refused as "not a spec"."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.pack.spec import load_spec
from bundler.support.toml_tables import MAX_TOML_BYTES
from tests.integration.test_init import STANDIN_CUDA, STANDIN_ZIP, init

NAMES = 3000


@pytest.fixture
def tmp_path(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()   # as test_init.py: init also searches beside the spec
    return tmp_path / "ws"


def test_an_app_naming_thousands_of_libraries_gets_a_spec_pack_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "app"
    app.mkdir()
    named = "\n".join(f'ctypes.WinDLL("cudnn_fake{i:05d}_{"x" * 200}64_8.dll")'
                      for i in range(NAMES))
    (app / "main.py").write_text(f"import ctypes\n{named}\n")
    code, out, err = init(capsys, app, "--source", f"cudnn={STANDIN_ZIP}",
                          "--source", f"cuda={STANDIN_CUDA}")
    assert code == 0, err
    spec = tmp_path / "app.spec"
    assert spec.stat().st_size < MAX_TOML_BYTES // 10
    load_spec(spec)   # pack's own reader
    text = spec.read_text(encoding="utf-8")
    assert f"and {NAMES - 20} more libraries" in text
    assert "cudnn_fake00019_" in text and "cudnn_fake00020_" not in text
