"""`bundler recipes --for FRAMEWORK[==VERSION] ...`: the releases that serve every
framework named (requirement lines, or requirements files), newest first, those pack
fetches itself (NVIDIA's PyPI wheels) first; each framework with its own figures and
where they come from (its wheel's build-info file, read without installing it:
init/requested.py; else bundler's framework table). `--json` prints a versioned
view (SCHEMA)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bundler.errors import EXIT_OK, SpecError
from bundler.frameworks.facts import FrameworkFacts, fitting_releases
from bundler.frameworks.fitting import fetchable
from bundler.init.requested import GPU_BUILDS, Requested, is_framework, lines_of, requested
from bundler.platforms.api import Platform
from bundler.releases.catalogue import Release
from bundler.support.wheel_names import normalize
from bundler.targets.registry import platform_for_release

SCHEMA = 1   # the --json view's version: a key's meaning never changes within one
_SHOWN = 12   # releases printed; --json lists every one


def add_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("--for", dest="for_", nargs="+", metavar="FRAMEWORK[==VERSION]",
                   help="list the releases that serve these frameworks (requirement "
                   "lines, e.g. onnxruntime-gpu==1.20.0 tensorflow==2.10.1, or a "
                   "requirements.txt): each framework's wheel is read (from --find-links, "
                   "the wheel cache, else fetched with pip into it) without installing it")
    r.add_argument("--find-links", action="append", default=[], metavar="DIR",
                   help="with --for: a folder of framework wheels to read first")
    r.add_argument("--offline", action="store_true", help="with --for: fetch no wheel "
                   "(the find-links folders and the wheel cache, else bundler's framework "
                   "table)")
    r.add_argument("--platform", default="win-x64", metavar="win-x64|linux-x64",
                   help="with --for: the platform's releases and wheels (default win-x64)")


def framework_query(name: str, platform: str) -> bool:
    """Whether NAME given alone reads as a framework requirement (onnxruntime-gpu,
    tensorflow==2.10.1, onnxruntime), not a release, family or recipe."""
    bare = name.split("==")[0].split(">")[0].split("<")[0].split("[")[0].strip()
    target = platform_for_release(platform)
    return any(c in name for c in "=<>") or normalize(bare) in {
        normalize(n) for n in GPU_BUILDS} or (target is not None and is_framework(bare, target))


def run_for(items: list[str], args: argparse.Namespace) -> int:
    platform = platform_for_release(args.platform)
    if platform is None:
        raise SpecError(f"--platform {args.platform}: no such platform",
                        "use win-x64 or linux-x64")
    lines, links = lines_of(items)
    for line in lines:   # a CPU build's name alone: say which GPU build is meant
        bare = normalize(line.split("=")[0].split("<")[0].split(">")[0].strip())
        if bare in GPU_BUILDS and not Path(line).is_file():
            raise SpecError(f"{line.split('=')[0].strip()} is the CPU build: it loads no "
                            "CUDA or cuDNN", f"name the GPU build: bundler recipes --for "
                            f"{GPU_BUILDS[bare].split(' ')[0]}"
                            f"{line[len(line.split('=')[0]):] if '=' in line else ''}")
    found = requested(lines, platform, [*links, *map(Path, args.find_links)], args.offline)
    named = [line for line in found.others if not any(Path(i).is_file() for i in items)]
    if named or not found.frameworks and not found.unknown:
        raise SpecError(f"{', '.join(named) or ', '.join(items)}: no GPU framework bundler "
                        "knows", "name one whose CUDA and cuDNN bundler reads: "
                        "onnxruntime-gpu, tensorflow (or tensorflow-gpu), paddlepaddle-gpu, "
                        "cupy-cudaNNx, mxnet-cuNNN, torch")
    if found.unknown:
        raise SpecError(f"what {'; '.join(found.unknown)} needs is unknown",
                        "give its wheel's folder with --find-links, or drop --offline")
    unreadable = [f for f in found.frameworks if f.unreadable]
    if unreadable:   # as pack refuses it: what the file would say is unknown
        raise SpecError(f"{unreadable[0].title}'s build-info file cannot be read "
                        f"({unreadable[0].unreadable})", "check the wheel you gave, or "
                        "let pip fetch the release's own")
    # a CPU build, or torch with its own CUDA and cuDNN, needs no bundled release
    needing = [f for f in found.frameworks if f.gpu_build and not f.ships_own_runtime]
    releases = fitting_releases(needing, platform.release_suffix, None) if needing else []
    view = _view(found, releases, platform)
    if args.json:
        print(json.dumps(view, indent=2))
        return EXIT_OK
    for framework in view["frameworks"]:
        print(f"{framework['title']}: {framework['needs']}")
        print(f"  from {framework['read_from']}")
        if framework["loads"]:
            print(f"  loads {', '.join(framework['loads'])}")
    if not needing:
        print("none of them loads a bundled CUDA or cuDNN: no release is needed")
        return EXIT_OK
    if not releases:
        print(f"no {platform.release_suffix} release bundler knows serves "
              f"{'all of them' if len(found.frameworks) > 1 else 'it'} (its CUDA, its cuDNN "
              "and every library it loads)")
        return EXIT_OK
    print(f"{len(releases)} release(s) serve {'all of them' if len(found.frameworks) > 1 else 'it'}"
          ", fetchable first, newest first:")
    for row in view["releases"][:_SHOWN]:
        print(f"  {row['name']:40} {row['how']}")
    if len(releases) > _SHOWN:
        print(f"  and {len(releases) - _SHOWN} more (--json lists them all)")
    print("name one in a spec's [runtime] recipe (bundler init writes the first of them)")
    return EXIT_OK


def _view(found: Requested, releases: list[Release], platform: Platform) -> dict:
    said = dict(found.said)
    return {"schema": SCHEMA, "platform": platform.release_suffix,
            "frameworks": [_framework(f, said.get(f.title, "")) for f in found.frameworks],
            "releases": [{"name": r.name, "cudnn": r.cudnn, "cuda": r.cuda,
                          "fetchable": fetchable(r),
                          "how": ("NVIDIA's PyPI wheel: pack fetches it" if fetchable(r)
                                  else "NVIDIA's zip: a download behind NVIDIA's login"),
                          "archives": [a.file_name for a in r.archives]}
                         for r in releases]}


def _framework(facts: FrameworkFacts, read_from: str) -> dict:
    cudnn, cudnn_by = facts.cudnn_minimum()
    cuda, cuda_by = facts.cuda_needed()
    loads = list(dict.fromkeys((*facts.loads, *(facts.row.loads if facts.row else ()))))
    needs = ", ".join(filter(None, (
        f"CUDA {cuda} ({cuda_by.rstrip(',')} says {cuda})" if cuda else "",
        f"cuDNN {cudnn} or newer ({cudnn_by.rstrip(',')} says {cudnn})" if cudnn else ""))) \
        or ("its own CUDA and cuDNN" if facts.ships_own_runtime else
            "a CPU build: no CUDA or cuDNN" if not facts.gpu_build else "no figures known")
    return {"distribution": facts.distribution, "version": facts.version,
            "title": facts.title, "read_from": read_from, "needs": needs,
            "cuda": {"figure": cuda, "said_by": cuda_by.rstrip(",")},
            "cudnn": {"minimum": cudnn, "said_by": cudnn_by.rstrip(",")},
            "gpu_build": facts.gpu_build, "ships_own_runtime": facts.ships_own_runtime,
            "loads": loads, "unreadable": facts.unreadable}
