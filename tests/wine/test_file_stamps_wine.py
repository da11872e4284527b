"""File stamps on Windows, for real under Wine with the official CPython: a write that
puts the size and modification time back still changes the stamp, so the up-to-date
check (and the store's input records) see it. Python's own `st_ctime` there is the
creation time, which the write leaves as it was: the test shows that too, so it proves
the Windows path and not a POSIX habit (support/file_stamps.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.harness.winenv.paths import PROJECT_ROOT

QUICKSTART = PROJECT_ROOT / "examples" / "quickstart"

EDIT = r'''
import json, os, sys, time
from pathlib import Path
from bundler.pack import fresh_stamps, up_to_date
from bundler.support.file_stamps import listing, stamp

app, store = Path(sys.argv[1]), Path(sys.argv[2])


def snap(files, folders):
    return fresh_stamps.snapshot(files, folders, [], [], store, "")


target = app / "lib" / "cudnn64_8.dll"
before = os.stat(target)
first, snapshot = stamp(target), snap([str(target)], [str(app)])
folder_only = snap([], [str(app)])
clock = up_to_date._file_system_clock(store)
time.sleep(0.05)
target.write_bytes(b"B" * before.st_size)           # same size ...
os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))   # ... times put back
after = os.stat(target)
print(json.dumps({
    "python_sees": [before.st_size, before.st_mtime_ns, before.st_ctime_ns]
                   == [after.st_size, after.st_mtime_ns, after.st_ctime_ns],
    "first": first, "again": stamp(target), "listed": snapshot["folders"][str(app)],
    "snapshot_same": snap([str(target)], [str(app)]) == snapshot,
    "folder_same": snap([], [str(app)]) == folder_only,
    "listed_is_stamp": {entry.name: list(entry.stamp) for entry in listing(app / "lib")}
                       == {"cudnn64_8.dll": list(stamp(target, follow_links=False))},
    "clock_after_stamp": clock is not None and first[2] <= clock,
    "link_or_not": stamp(app / "lib", follow_links=False) == stamp(app / "lib"),
}))
try:
    stamp(app / "absent.dll")
except OSError as exc:
    print(json.dumps({"absent": type(exc).__name__}))
'''


def test_a_write_with_size_and_times_put_back_changes_the_stamp_on_windows(
        win_python, tmp_path: Path) -> None:
    app, store = tmp_path / "app", tmp_path / "store"
    (app / "lib").mkdir(parents=True)
    (app / "lib" / "cudnn64_8.dll").write_bytes(b"A" * 4096)
    (app / "main.py").write_text("print('app')\n")
    script = tmp_path / "edit.py"
    script.write_text(EDIT)
    result = win_python.run([script, app, store], check=True, timeout=120)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    seen, absent = lines
    # Python's os.stat on Windows cannot tell: size, mtime and st_ctime (creation) as before
    assert seen["python_sees"] is True
    assert seen["first"][0] == 4096 and seen["first"][1:3] != [0, 0]
    assert seen["first"][:2] == seen["again"][:2]          # size and mtime put back
    assert seen["first"][2] != seen["again"][2]            # the change time moved
    assert seen["first"][3] == seen["again"][3] != 0       # the same file, its id known
    assert seen["snapshot_same"] is False                  # so a re-pack packs in full
    assert seen["folder_same"] is False                    # the folder's listing sees it too
    assert seen["listed_is_stamp"] is True                 # one query per folder, same stamp
    # a folder's entries carry their file id (scandir's stat on Windows has none)
    assert all(entry[3] != 0 for entry in seen["listed"].values())
    assert seen["clock_after_stamp"] is True
    assert seen["link_or_not"] is True                     # a plain folder: the same either way
    assert absent == {"absent": "FileNotFoundError"}


def test_a_windows_repack_sees_a_careful_edit_of_the_app(win_python, tmp_path: Path) -> None:
    """The user's case, end to end on Windows: `bundler pack` of the quickstart under the
    official CPython, again (up to date), then an app file rewritten with its size and
    modification time put back: the next pack packs in full and ships the new bytes."""
    project = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, project)
    main = project / "app" / "main.py"

    def pack() -> str:
        result = win_python.run(["-m", "bundler", "pack", "app.spec"], cwd=project,
                                timeout=600)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    assert pack().startswith("packed ")
    assert pack().startswith("up to date: ")
    before = main.stat()
    edited = main.read_bytes().replace(b"Quickstart app", b"quickstart app", 1)
    assert len(edited) == before.st_size
    main.write_bytes(edited)
    os.utime(main, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (main.stat().st_size, main.stat().st_mtime_ns) == (before.st_size,
                                                              before.st_mtime_ns)
    assert pack().startswith("packed ")
    # the bundled entry is the edited one (with the bootstrap lines pack puts in it)
    assert (project / "dist" / "quickstart" / "main.py").read_bytes().startswith(
        b'"""quickstart app')
