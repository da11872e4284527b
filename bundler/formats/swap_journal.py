"""A crash-safe swap of a finished bundle (and its lock) into place.

A new bundle is built completely in a staging folder beside its target, and its lock
in a temporary file beside the lock. Then a journal, `.<app>.swap.json` beside the
target, records the moves that follow; it is written whole (temporary file + rename),
so it either exists complete or not at all. From that instant the swap is decided:

1. the previous bundle moves into a retired folder, 2. the staged bundle moves to the
target, 3. the temporary lock replaces the lock (an atomic rename), 4. the retired
folder and the journal are removed.

Each step is one rename whose effect can be seen on disk, so whoever finds a journal
(the next pack, `bundler verify`) knows what is done and completes the swap
(`roll_forward`); if a step cannot be done (a running app holds its folder on
Windows) it undoes them (`roll_back`) instead. The lock is renamed last: until then
the previous bundle is complete in the retired folder, and once it is renamed the new
bundle and lock are both in place. Without a journal, staging folders and temporary
files are debris of killed runs, and `remove_debris` deletes them.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from bundler.errors import RefusedError
from bundler.support.exclusive import exclusive, lock_file
from bundler.support.json_files import read_json
from bundler.support.paths import remove_tree

JOURNAL_FORMAT = 1
_MAX_JOURNAL_BYTES = 1 << 20
# Test-only hooks: the test suite names a checkpoint to have the pack kill itself
# (SIGKILL) there, proving every instant of the swap is recoverable, or to pause there
# (touching FILE.paused, until FILE exists) to run a second pack meanwhile.
KILL_AT_ENV = "BUNDLER_TEST_KILL_AT"
PAUSE_AT_ENV = "BUNDLER_TEST_PAUSE_AT"   # "checkpoint:FILE"


def checkpoint(name: str) -> None:
    if os.environ.get(KILL_AT_ENV) == name:
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
    point, _, flag = os.environ.get(PAUSE_AT_ENV, "").partition(":")
    if point == name and flag:
        Path(flag + ".paused").touch()
        while not Path(flag).exists():
            time.sleep(0.05)


_JOURNAL_SUFFIX = ".swap.json"


def journal_path(target: Path) -> Path:
    return target.with_name(f".{target.name}{_JOURNAL_SUFFIX}")


def journaled_targets(folder: Path) -> list[Path]:
    """The targets inside `folder` that have a journal (a swap that was interrupted)."""
    if not folder.is_dir():
        return []
    return [folder / p.name[1:-len(_JOURNAL_SUFFIX)] for p in folder.glob(f".*{_JOURNAL_SUFFIX}")]


def is_pack_file_of(path: Path, name: str) -> bool:
    """Whether `name`, beside `path` (a bundle folder or a lock), is one of the files or
    folders packs of `path` keep there while they run (staging, retired bundle, journal,
    temporary lock, pack lock). Only `path`'s own: `.env.new-prod` beside it is not."""
    journal = journal_path(path)
    return name.startswith((staging_prefix(path), retired_prefix(path), pending_prefix(path))
                           ) or name in (journal.name, _journal_temporary(journal).name,
                                         lock_file(path).name, zip_note_path(path).name)


def zip_note_path(target: Path) -> Path:
    """Beside a bundle while a pack writes its --zip: the zip's path (zip/output.py)."""
    return target.with_name(f".{target.name}.zipping")


def staging_prefix(target: Path) -> str:
    return f".{target.name}.staging-"


def retired_prefix(target: Path) -> str:
    return f".{target.name}.old-"


def pending_prefix(final: Path) -> str:
    return f".{final.name}.new-"


def _journal_temporary(journal: Path) -> Path:
    return journal.with_name(journal.name + ".tmp")


@dataclass(frozen=True)
class Swap:
    target: str
    staging: str
    retired: str          # a folder; the previous bundle moves into it under its own name
    files: list[list[str]]  # [temporary, final] of each file replaced with the bundle
    format: int = JOURNAL_FORMAT

    @property
    def _old(self) -> Path:
        return Path(self.retired) / Path(self.target).name


def begin(swap: Swap) -> None:
    """Write the journal: from here on the swap completes, now or at the next run."""
    path = journal_path(Path(swap.target))
    temporary = _journal_temporary(path)
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump(asdict(swap), out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def roll_forward(swap: Swap) -> None:
    target, staging = Path(swap.target), Path(swap.staging)
    if staging.exists():  # the new bundle is not in place yet
        if target.exists():
            os.replace(target, swap._old)
            checkpoint("swap-retired")
        os.replace(staging, target)
        checkpoint("swap-moved-in")
    for temporary, final in swap.files:
        if Path(temporary).exists():
            os.replace(temporary, final)
            checkpoint("swap-lock-replaced")
    _finish(swap)


def roll_back(swap: Swap) -> None:
    """Undo the moves made so far; only possible while a temporary file is pending."""
    target, staging = Path(swap.target), Path(swap.staging)
    if not staging.exists() and target.exists():
        os.replace(target, staging)
        checkpoint("undo-moved-out")
    if swap._old.exists() and not target.exists():
        os.replace(swap._old, target)
        checkpoint("undo-restored")
    remove_tree(staging)
    for temporary, _ in swap.files:
        Path(temporary).unlink(missing_ok=True)
    _finish(swap)


def can_roll_back(swap: Swap) -> bool:
    return any(Path(temporary).exists() for temporary, _ in swap.files)


def _finish(swap: Swap) -> None:
    remove_tree(swap.retired)
    checkpoint("swap-retired-removed")
    journal_path(Path(swap.target)).unlink(missing_ok=True)


def read_journal(target: Path) -> Swap | None:
    path = journal_path(target)
    if not path.exists():
        return None
    hint = "finish or undo the swap by hand (see the README, \"What can go wrong\")"
    data = read_json(path, _MAX_JOURNAL_BYTES, RefusedError, hint, "not a swap journal")
    try:
        swap = Swap(**data)
        if swap.format != JOURNAL_FORMAT or Path(swap.target) != target:
            raise ValueError("another format or target")
        return swap
    except (TypeError, ValueError) as exc:
        raise RefusedError(f"{path}: not a swap journal bundler can complete ({exc})",
                           hint) from None


def recover(target: Path) -> str:
    """Complete (or, if it cannot be completed, undo) a swap a killed run left; return
    what was done ("" if there was nothing to do). Call with the target's lock held."""
    swap = read_journal(target)
    if swap is None:
        return ""
    try:
        roll_forward(swap)
        return f"{target}: completed the swap of a pack that was interrupted"
    except OSError as exc:
        if not can_roll_back(swap):
            raise _stuck(swap, exc) from None
        try:
            roll_back(swap)
        except OSError:
            raise _stuck(swap, exc) from None
        return f"{target}: undid the swap of a pack that was interrupted ({exc.strerror})"


def recover_beside(target: Path, notify: Callable[[str], object]) -> None:
    """For readers of a bundle (verify): complete a swap a killed pack left, waiting
    for a pack still running. Nothing to do (no lock taken) when there is no journal."""
    if not journal_path(target).exists():
        return
    with exclusive(lock_file(target), str(target), notify):
        done = recover(target)
    if done:
        notify(f"bundler: {done}")


def _stuck(swap: Swap, exc: OSError) -> RefusedError:
    return RefusedError(f"{swap.target}: an interrupted swap can be neither completed nor "
                        f"undone ({exc.strerror or exc}); the previous bundle is in "
                        f"{swap.retired}", "close the app (or anything using its files) and "
                        "pack again: the next pack completes the swap")


def remove_debris(target: Path, beside: list[Path]) -> None:
    """Delete staging folders, retired folders and temporary files of killed runs.
    Only call with no journal left and with the target's (and `beside`'s) locks held."""
    prefixes = (staging_prefix(target), retired_prefix(target))
    if target.parent.is_dir():
        for entry in target.parent.iterdir():
            if entry.name.startswith(prefixes):
                remove_tree(entry)
    _journal_temporary(journal_path(target)).unlink(missing_ok=True)
    for final in beside:
        if final.parent.is_dir():
            for entry in final.parent.glob(pending_prefix(final) + "*"):
                entry.unlink(missing_ok=True)
