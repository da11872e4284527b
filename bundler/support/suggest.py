"""Short lists and "did you mean" for messages: a refusal names each candidate once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, candidates: Iterable[str], cutoff: float = 0.75) -> str:
    """The candidate `name` is most likely a typo of, or "" when none is close."""
    found = difflib.get_close_matches(name, list(dict.fromkeys(candidates)), n=1,
                                      cutoff=cutoff)
    return found[0] if found else ""


def did_you_mean(name: str, candidates: Iterable[str], cutoff: float = 0.75) -> str:
    """" (did you mean 'x'?)" to append to a message, or "" when no candidate is close.
    Failing a close spelling, the candidates of the same first word: cuDNN 8's component
    'cnn_infer' is cuDNN 9's 'cnn', and 'cnn' is 'cnn_infer' or 'cnn_train'."""
    names = list(dict.fromkeys(candidates))
    found = [closest(name, names, cutoff)]
    if not found[0]:
        found = [c for c in names if c.split("_")[0] == name.split("_")[0]]
    return f" (did you mean {' or '.join(repr(f) for f in found)}?)" if found else ""


def listing(items: Iterable[str], cap: int = 6, sep: str = ", ") -> str:
    """Each item once, in first-seen order, joined by `sep`; past `cap`, the rest are
    counted ("and 7 more"), so one long refusal stays readable on a terminal."""
    unique = list(dict.fromkeys(items))
    shown = sep.join(unique[:cap])
    return shown + (f" and {len(unique) - cap} more" if len(unique) > cap else "")
