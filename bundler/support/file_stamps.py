"""A file's stamp: what tells, without reading it, that a file is the one seen before.

Size, modification time, change time, file id and device. The change time is the one
that matters against a careful edit: every write sets it and no user call sets it back
(`touch -r` restores only the modification time). The store's input records
(pack/sources/archive_source.py) and the up-to-date records (pack/up_to_date.py) both
compare these.
"""

from __future__ import annotations

import os

Stamp = tuple[int, int, int, int, int]   # size, mtime (ns), ctime (ns), file id, device


def change_stamp(facts: os.stat_result) -> Stamp:
    return facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns, facts.st_ino, facts.st_dev
