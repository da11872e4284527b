"""What Windows can hold of a bundle: every path it ships, judged as one tree.

The name rules themselves (reserved device names, trailing dots and spaces, forbidden
and control characters, bidirectional controls, raw bytes) are support/paths.py's, the
one rule set the spec's paths, the archives' members and the app folder's files follow;
this adds what only the whole tree shows (two paths Windows takes for one) and MAX_PATH.
Pack asks it through the Platform seam (`Platform.unholdable_path`) for every file and
folder of the staged bundle, the embedded `python/` folder's wheels included, before the
bundle is swapped in.
"""

from __future__ import annotations

from collections.abc import Iterable

from bundler.support.paths import (
    MAX_PATH,
    windows_fold,
    windows_name_problem,
    windows_path_length,
)


def unholdable_path(relpaths: Iterable[str]) -> tuple[str, str] | None:
    """The first of a bundle's paths (relative, with '/') Windows cannot hold, and why;
    None when it can hold them all. Folders are among the paths, so a case twin of a
    folder is found at the folder."""
    seen: dict[str, str] = {}
    for relpath in sorted(relpaths):
        problem = next((why for part in relpath.split("/")
                        if (why := windows_name_problem(part))), "")
        if problem:
            return relpath, problem
        length = windows_path_length(relpath)
        if length >= MAX_PATH:
            return relpath, (f"it is {length} characters long, and Windows paths are "
                             f"shorter than {MAX_PATH} (MAX_PATH) unless every machine "
                             "running the app opts in to long paths, the bundle's own "
                             "folder included")
        first = seen.setdefault(windows_fold(relpath), relpath)
        if first != relpath:
            return relpath, (f"'{first}' beside it differs from it only in case, and "
                             "Windows takes them for one file")
    return None
