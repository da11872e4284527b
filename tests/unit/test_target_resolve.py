"""Where uv is told wheels come from: pip's settings, which uv does not read, passed on
as pip would apply them; uv's pylock.toml read (bundler/pack/builders/target_resolve.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.pack.builders.target_resolve import pip_settings, read_pylock

PIP_VARIABLES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX",
                 "PIP_TRUSTED_HOST", "PIP_CONFIG_FILE")


@pytest.fixture
def no_pip_settings(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PIP_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")   # pip reads no file at all
    return monkeypatch


def test_pips_variables_are_passed_to_uv(tmp_path: Path, no_pip_settings: pytest.MonkeyPatch
                                         ) -> None:
    (tmp_path / "requirements.txt").write_text("demo\n")
    no_pip_settings.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    no_pip_settings.setenv("PIP_EXTRA_INDEX_URL", "https://a.example/simple https://b.example")
    no_pip_settings.setenv("PIP_FIND_LINKS", "/srv/wheels")
    no_pip_settings.setenv("PIP_TRUSTED_HOST", "a.example")
    assert pip_settings(tmp_path / "requirements.txt") == [
        "--index-url", "https://mirror.example/simple",
        "--extra-index-url", "https://a.example/simple",
        "--extra-index-url", "https://b.example", "--find-links", "/srv/wheels",
        "--allow-insecure-host", "a.example"]
    no_pip_settings.setenv("PIP_NO_INDEX", "1")
    assert pip_settings(tmp_path / "requirements.txt")[:1] == ["--no-index"]


def test_a_files_own_index_wins_over_pips(tmp_path: Path,
                                          no_pip_settings: pytest.MonkeyPatch) -> None:
    """As in pip: a requirements file's --index-url (a nested one's too) replaces the
    configured index; extra indexes and find-links add up."""
    (tmp_path / "requirements.txt").write_text("-r base.txt\ndemo\n")
    (tmp_path / "base.txt").write_text("--index-url=https://own.example/simple\n")
    no_pip_settings.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    no_pip_settings.setenv("PIP_FIND_LINKS", "/srv/wheels")
    assert pip_settings(tmp_path / "requirements.txt") == ["--find-links", "/srv/wheels"]


def test_pips_configuration_file_is_read(tmp_path: Path,
                                         no_pip_settings: pytest.MonkeyPatch) -> None:
    (tmp_path / "requirements.txt").write_text("demo\n")
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = https://global.example/simple\n"
                      "[install]\nindex-url = https://install.example/simple\n")
    no_pip_settings.setenv("PIP_CONFIG_FILE", str(config))
    args = pip_settings(tmp_path / "requirements.txt")
    assert args[:2] == ["--index-url", "https://install.example/simple"]


def test_the_pylock_gives_each_projects_wheels_for_the_target(tmp_path: Path) -> None:
    pylock = tmp_path / "pylock.toml"
    pylock.write_text('lock-version = "1.0"\n\n[[packages]]\nname = "Demo_Two"\n'
                      'version = "1.0"\nwheels = [{ url = "https://x.example/demo_two-1.0-'
                      'py3-none-any.whl", hashes = { sha256 = "' + "A" * 64 + '" } }, '
                      '{ path = "w/demo_two-1.0-py3-none-win_amd64.whl", hashes = '
                      '{ sha256 = "' + "b" * 64 + '" } }]\n')
    (project,) = read_pylock(pylock)
    assert (project.name, project.version) == ("demo-two", "1.0")
    assert [(w.file, w.sha256) for w in project.wheels] == [
        ("demo_two-1.0-py3-none-any.whl", "a" * 64),
        ("demo_two-1.0-py3-none-win_amd64.whl", "b" * 64)]
    pylock.write_text('[[packages]]\nname = "demo"\nversion = "1"\n'
                      'sdist = { url = "https://x.example/demo-1.tar.gz" }\n')
    with pytest.raises(SourceError, match="uv named no wheel with a sha256 for 'demo'"):
        read_pylock(pylock)
