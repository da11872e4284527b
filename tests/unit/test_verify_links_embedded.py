"""An embedded-python bundle's `python/` replaced by a link (to `/`, here) is refused
in one line, never walked: verify used to walk the whole file system through it
(issue 28, item 5). Packed like tests/integration/test_embedded_python_verify.py (offline)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bundler.pack.pipeline import PackResult
from tests.integration.test_embedded_python_verify import bundle_copy, packed, verify

__all__ = ["packed"]   # the module-scoped fixture, packed once
pytestmark = pytest.mark.skipif(os.name == "nt", reason="symbolic links as POSIX makes them")


def test_python_as_a_link_is_refused_not_walked(packed: tuple[Path, PackResult],
                                                tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bundle = bundle_copy(packed, tmp_path)
    shutil.rmtree(bundle / "python")
    (bundle / "python").symlink_to("/")
    count = sum(1 for e in packed[1].manifest.built if e.path.startswith("python/"))
    code, report = verify(capsys, bundle)
    assert code == 1
    assert report["changed"] == [f"python/ (a link to /, not the folder of {count} files "
                                 "pack built: not walked)"]
    assert report["unexpected"] == [] and report["missing"] == []


def test_a_link_added_inside_python_is_listed(packed: tuple[Path, PackResult],
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bundle = bundle_copy(packed, tmp_path)
    (bundle / "python" / "Lib" / "etc").symlink_to("/etc")
    code, report = verify(capsys, bundle)
    assert code == 1 and report["unexpected"] == ["python/Lib/etc (a link to /etc)"]
