"""The runtime half of a rendered recipe, from inputs the spec gives instead of the
runtime set's pinned wheels.

A runtime set (recipes/families/cuda<M>-win-x64.toml) pairs every cuDNN release of CUDA
<M> with NVIDIA's wheels of the newest CUDA <M> release bundler knows. A spec may pair
other files, in its own [sources] table, without writing a recipe:

- `cuda = "C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.6"`: an installed CUDA
  toolkit of that major (11.x to 13.x) replaces every wheel of the set. Its DLLs are
  found by name in `bin/` (`bin/x64/` from CUDA 13 on); its CUDA release, which sets the
  driver minimum, is read from the toolkit's `version.json`.
- `cublas = "wheels/nvidia_cublas_cu12-12.4.5.8-py3-none-win_amd64.whl"` (any source
  id of the set): another release's wheel of that companion. It must hold the same DLL
  names (the same ABI); its members are read from its zip directory.
- `cudart = "/usr/lib/python3/site-packages"` (a folder for a wheel's id): the
  site-packages pip installed that companion into (or an unpacked wheel); its
  `<package>-<version>.dist-info` says which release it is (a version; for the CUDA
  runtime, of the release's CUDA major, as for a toolkit), and its files are read as a
  folder (Linux apps whose Python already has NVIDIA's wheels).

Files given this way have no catalogue pin and no FileVersion bundler could know in
advance: their version checks are left out, the pack says the input is trusted on first
pack, and the lock pins it from then on, as for any unpinned input.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bundler.errors import SourceError
from bundler.releases.families import RuntimeSet
from bundler.support.json_files import read_json
from bundler.support.regular_files import open_regular
from bundler.support.wheel_names import normalize
from bundler.support.zip_reader import ZipArchive
from bundler.targets.registry import Platform, platform_for, platform_for_wheel_tag

TOOLKIT_SOURCE = "cuda"
TOOLKIT_BIN_FOLDERS = ("bin", "bin/x64")
TOOLKIT_LICENCE = "EULA.txt"
_CUDA_RUNTIME = "nvidia_cuda_runtime"   # the package of libcudart (normalized name)
# NVRTC's builtins library is named after the CUDA minor (nvrtc-builtins64_129.dll for 12.9,
# libnvrtc-builtins.so.13.0 for 13.0): a toolkit, wheel or installed release of another
# minor has its own.
_PER_MINOR = re.compile(r"^(nvrtc-builtins64_)\d+(\.dll)$|^(libnvrtc-builtins\.so\.\d+\.)\d+$",
                        re.IGNORECASE)
_VERSION = re.compile(r"[0-9]{1,6}(\.[0-9]{1,9}){1,4}")   # 12.6.2, 11.8.89, 9.19.0.56
_MAX_VERSION_FILE_BYTES = 1 << 20   # NVIDIA's version.json is about 4 KB
_WHEEL_NAME = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)-[^-]+-[^-]+-(?P<plat>[^-]+)"
                         r"\.whl$")


@dataclass(frozen=True)
class RuntimeTables:
    """A runtime set's recipe tables after the spec's inputs are applied."""

    cuda: str
    sources: dict[str, Any]
    components: dict[str, Any]
    files: dict[str, Any]
    licences: list[dict[str, str]]
    given: str = ""     # how the set was changed, for the recipe's description

    @classmethod
    def of(cls, runtime: RuntimeSet) -> RuntimeTables:
        tables = runtime.tables
        return cls(runtime.cuda, dict(tables.get("sources", {})),
                   dict(tables.get("components", {})), dict(tables.get("files", {})),
                   list(tables.get("licences", [])))


def overrides(runtime: RuntimeSet, inputs: Mapping[str, Path]) -> bool:
    """Whether the spec's inputs change the runtime set (and so need a rendered recipe)."""
    return _toolkit_given(runtime, inputs) or bool(_other_wheels(runtime, inputs)) or \
        bool(_installed(runtime, inputs))


def runtime_tables(runtime: RuntimeSet, inputs: Mapping[str, Path]) -> RuntimeTables:
    tables = RuntimeTables.of(runtime)
    if _toolkit_given(runtime, inputs):   # its libraries are named as the set's platform's
        return _from_toolkit(tables, inputs[TOOLKIT_SOURCE], platform_for(runtime.platform))
    for sid, path in _other_wheels(runtime, inputs).items():
        tables = _with_wheel(tables, sid, path)
    for sid, path in _installed(runtime, inputs).items():
        tables = _with_installed(tables, sid, path)
    return tables


def _installed(runtime: RuntimeSet, inputs: Mapping[str, Path]) -> dict[str, Path]:
    """Folders given for the set's wheels: where pip installed them."""
    sources = runtime.tables.get("sources", {})
    return {sid: path for sid, path in inputs.items()
            if sources.get(sid, {}).get("kind") == "wheel" and path.is_dir()}


def _toolkit_given(runtime: RuntimeSet, inputs: Mapping[str, Path]) -> bool:
    """A toolkit folder for a set of wheels (the CUDA 10.x sets are toolkits already)."""
    return TOOLKIT_SOURCE in inputs and TOOLKIT_SOURCE not in runtime.tables.get("sources", {})


def _other_wheels(runtime: RuntimeSet, inputs: Mapping[str, Path]) -> dict[str, Path]:
    """Wheels for the set's platform named otherwise than the pinned ones (a wheel of
    another platform is left to the wheel source, which names what is wrong)."""
    sources = runtime.tables.get("sources", {})
    found = {}
    for sid, path in inputs.items():
        pinned = sources.get(sid, {})
        parsed = _WHEEL_NAME.match(path.name)
        if pinned.get("kind") == "wheel" and path.is_file() and parsed is not None \
                and _platform_tag(parsed["plat"], pinned["platform_tag"]) \
                and path.name != pinned["file_name"]:
            found[sid] = path
    return found


def _platform_tag(tags: str, pinned: str) -> str:
    """The tag of a wheel's platform tags ("manylinux2014_x86_64.manylinux_2_17_x86_64")
    for the pinned tag's platform ("" if none): another release of a companion may carry
    another manylinux tag of the same platform."""
    want = platform_for_wheel_tag(pinned)
    return next((t for t in tags.split(".") if want is not None
                 and platform_for_wheel_tag(t) is want), "")


# -- a CUDA toolkit folder ------------------------------------------------------------------

def _from_toolkit(tables: RuntimeTables, folder: Path, platform: Platform) -> RuntimeTables:
    cuda = toolkit_version(folder)
    if cuda.split(".")[0] != tables.cuda.split(".")[0]:
        raise SourceError(f"{folder}: a CUDA {cuda} toolkit, but the release is built for "
                          f"CUDA {tables.cuda.split('.')[0]}",
                          f"give a CUDA {tables.cuda.split('.')[0]}.x toolkit, or name the "
                          f"release for CUDA {cuda.split('.')[0]}")
    found = _toolkit_dlls(folder, platform)
    renamed = {name: _in_toolkit(name, found) for name in _set_dlls(tables)}
    missing = sorted(n for n, at in renamed.items() if not at and _is_default(tables, n))
    if missing:
        raise SourceError(f"{folder}: this CUDA {cuda} toolkit has no {', '.join(missing)} "
                          f"in {' or '.join(f'{b}/' for b in TOOLKIT_BIN_FOLDERS)}",
                          "give the toolkit's root folder (the one holding bin/ and "
                          "version.json), with the CUDA runtime and cuBLAS installed")
    components = {}
    for cname, component in tables.components.items():
        paths = [renamed[_basename(ref)] for ref in component["files"]]
        components[cname] = {**component,
                             "files": [f"{TOOLKIT_SOURCE}:{p}" for p in paths if p]}
    components = {k: v for k, v in components.items() if v["files"]}
    default = [f for c in components.values() if c.get("default", True) for f in c["files"]]
    members = sorted({ref.split(":", 1)[1] for ref in default})
    optional = sorted({ref.split(":", 1)[1] for c in components.values()
                       for ref in c["files"]} - set(members))
    has_licence = (folder / TOOLKIT_LICENCE).is_file()
    source = {"kind": "toolkit",
              "contents": members + ([TOOLKIT_LICENCE] if has_licence else []),
              **({"optional_contents": optional} if optional else {})}
    names = {name: at.rsplit("/", 1)[-1] for name, at in renamed.items() if at}
    files = {names[name]: _unpinned(facts, names)
             for name, facts in tables.files.items() if name in names}
    licences = ([{"source": TOOLKIT_SOURCE, "member": TOOLKIT_LICENCE,
                  "as": "NVIDIA_CUDA_EULA.txt"}] if has_licence else [])
    return RuntimeTables(cuda, {TOOLKIT_SOURCE: source}, components,
                         {k: v for k, v in files.items() if v}, licences,
                         given=f"CUDA {cuda} toolkit")


def toolkit_version(folder: Path) -> str:
    """The CUDA release of a toolkit folder, from what NVIDIA's installer writes there:
    version.json from CUDA 11.1 on ({"cuda": {"version": "12.6.2"}, ...}), version.txt
    before ("CUDA Version 11.0.221")."""
    path = folder / "version.json"
    if not os.path.lexists(path):
        if os.path.lexists(folder / "version.txt"):
            return _version_txt(folder / "version.txt")
        raise SourceError(f"{folder}: no version.json or version.txt, so not a CUDA "
                          "toolkit's root folder",
                          "give the folder that holds bin/ and version.json, e.g. "
                          "C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.6")
    # Read as any JSON bundler did not write: a regular file (a named pipe there would
    # hang the pack, a link to /dev/zero fill the memory), bounded, nesting refused.
    hint = 'it should hold {"cuda": {"version": "12.6.2", ...}}'
    data = read_json(path, _MAX_VERSION_FILE_BYTES, SourceError, hint,
                     "not the JSON NVIDIA's installer writes")
    try:
        version = data["cuda"]["version"]
    except (KeyError, TypeError, IndexError):
        raise SourceError(f"{path}: cannot read the CUDA version from it (no cuda.version)",
                          hint) from None
    return _checked_version(version, path)


def _version_txt(path: Path) -> str:
    try:
        with open_regular(path) as handle:
            text = handle.read(_MAX_VERSION_FILE_BYTES).decode("utf-8", "replace")
    except OSError as error:
        raise SourceError(f"{path}: cannot read it ({error.strerror})",
                          "give an unmodified CUDA toolkit folder") from None
    found = re.search(r"CUDA Version (\S+)", text)
    return _checked_version(found.group(1) if found else text.strip()[:40], path)


def _checked_version(version: object, path: Path) -> str:
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        shown = repr(version) if len(repr(version)) <= 40 else repr(version)[:40] + "..."
        raise SourceError(f"{path}: the CUDA version is {shown}, not a version",
                          "give an unmodified CUDA toolkit folder")
    return version


def _toolkit_dlls(folder: Path, platform: Platform) -> dict[str, str]:
    """Lower-cased library name -> path below the folder, for each bin folder there is."""
    found: dict[str, str] = {}
    for sub in TOOLKIT_BIN_FOLDERS:
        if (folder / sub).is_dir():
            for path in sorted(p for p in (folder / sub).iterdir()
                               if platform.is_library(p.name) and p.is_file()):
                found.setdefault(path.name.lower(), f"{sub}/{path.name}")
    return found


def _in_toolkit(name: str, found: dict[str, str]) -> str:
    if name.lower() in found:
        return found[name.lower()]
    prefix = _per_minor_prefix(name)
    return next((at for key, at in sorted(found.items()) if key.startswith(prefix)), "") \
        if prefix else ""


def _per_minor_prefix(name: str) -> str:
    """The part of a per-minor library's name that every minor shares ("" for others)."""
    per_minor = _PER_MINOR.match(name)
    return (per_minor.group(1) or per_minor.group(3)).lower() if per_minor else ""


def _set_dlls(tables: RuntimeTables) -> list[str]:
    return [_basename(ref) for c in tables.components.values() for ref in c["files"]]


def _is_default(tables: RuntimeTables, name: str) -> bool:
    return any(c.get("default", True) and name in map(_basename, c["files"])
               for c in tables.components.values())


def _basename(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _unpinned(facts: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A file's facts without its FileVersion (that of the pinned wheel), its `loads`
    renamed to the files actually given."""
    kept = {k: v for k, v in facts.items() if k != "version"}
    if "loads" in kept:
        kept["loads"] = [names.get(n, n) for n in kept["loads"]]
    return kept


# -- another release's wheel of one companion ----------------------------------------------

def _with_wheel(tables: RuntimeTables, sid: str, path: Path) -> RuntimeTables:
    pinned = tables.sources[sid]
    parsed = _WHEEL_NAME.match(path.name)
    assert parsed is not None   # _other_wheels matched it
    package = parsed["name"].lower().replace("_", "-")
    if package != pinned["package"]:
        raise SourceError(f"{path}: a wheel of {package}, but source '{sid}' is "
                          f"{pinned['package']}",
                          f"give a wheel of {pinned['package']}, or the file to the "
                          "source it belongs to (bundler recipes NAME lists them)")
    with ZipArchive(path) as archive:
        members = list(archive.members)
    moved = {old: _same_file(old, members, path, sid) for old in pinned["contents"]}
    source = {**{k: v for k, v in pinned.items() if k not in ("sha256", "pin_source")},
              "version": parsed["version"], "file_name": path.name,
              "platform_tag": _platform_tag(parsed["plat"], pinned["platform_tag"]),
              "contents": [moved[m] for m in pinned["contents"]]}
    tables = _renamed(tables, sid, moved)
    dlls = {_basename(m) for m in moved.values() if ".dist-info/" not in m}
    files = {name: ({k: v for k, v in facts.items() if k != "version"}
                    if name in dlls else facts) for name, facts in tables.files.items()}
    licences = [{**lic, "member": moved.get(lic["member"], lic["member"])}
                if lic["source"] == sid else lic for lic in tables.licences]
    given = ", ".join(filter(None, [tables.given, f"{package} {parsed['version']}"]))
    return RuntimeTables(tables.cuda, {**tables.sources, sid: source}, tables.components,
                         {k: v for k, v in files.items() if v}, licences, given=given)


def _same_file(member: str, members: list[str], path: Path, sid: str) -> str:
    """The member of the given wheel that is the pinned wheel's `member`: the same path,
    else (a licence in another dist-info folder) the same name below a *.dist-info/."""
    if member in members:
        return member
    prefix = _per_minor_prefix(_basename(member))
    folder = member.rsplit("/", 1)[0] + "/"
    same = [m for m in members if prefix and m.startswith(folder) and "/" not in
            m[len(folder):] and _basename(m).lower().startswith(prefix)
            and _PER_MINOR.match(_basename(m))]
    if len(same) == 1:
        return same[0]   # NVRTC's builtins, named after this release's CUDA minor
    top, _, below = member.partition("/")
    if top.endswith(".dist-info"):
        names = {below, below.rsplit("/", 1)[-1]}
        for candidate in members:
            ctop, _, cbelow = candidate.partition("/")
            if ctop.endswith(".dist-info") and cbelow in names | {f"licenses/{below}"}:
                return candidate
    raise SourceError(f"{path}: has no {member} (source '{sid}' needs it)",
                      "give a wheel of the same CUDA major: its DLL names must be the "
                      "ones the runtime set names (bundler recipes NAME)")


# -- a site-packages (or unpacked wheel) holding one companion -------------------------------

def _with_installed(tables: RuntimeTables, sid: str, folder: Path) -> RuntimeTables:
    pinned = tables.sources[sid]
    package = normalize(pinned["package"])
    infos = sorted(p.name for p in folder.glob("*.dist-info")
                   if normalize(p.name.split("-")[0]) == package)
    if len(infos) != 1:
        raise SourceError(f"{folder}: source '{sid}' needs {pinned['package']} installed "
                          f"there; found {', '.join(infos) or 'no ' + package + '-*.dist-info'}",
                          f"give the site-packages folder pip installed {pinned['package']} "
                          "into (one release of it), or its wheel")
    version = _installed_version(folder / infos[0], tables, pinned["package"])
    moved = {m: _installed_member(m, infos[0], folder) for m in pinned["contents"]}
    source = {"kind": "folder", "contents": [moved[m] for m in pinned["contents"]]}
    tables = _renamed(tables, sid, moved)
    dlls = {_basename(m) for m in moved.values() if ".dist-info/" not in m}
    files = {name: ({k: v for k, v in facts.items() if k != "version"}
                    if name in dlls else facts) for name, facts in tables.files.items()}
    licences = [{**lic, "member": moved.get(lic["member"], lic["member"])}
                if lic["source"] == sid else lic for lic in tables.licences]
    given = ", ".join(filter(None, [tables.given,
                                    f"{pinned['package']} {version} (installed)"]))
    # The CUDA runtime's release is the CUDA the bundle runs (the driver minimum's key).
    cuda = ".".join(version.split(".")[:2]) if package.startswith(_CUDA_RUNTIME) \
        else tables.cuda
    return RuntimeTables(cuda, {**tables.sources, sid: source}, tables.components,
                         {k: v for k, v in files.items() if v}, licences, given=given)


def _installed_version(dist_info: Path, tables: RuntimeTables, package: str) -> str:
    """The release a `<package>-<version>.dist-info` folder names, checked: a version
    (not "" or "abc"), and for the CUDA runtime one of the release's CUDA major — its
    release becomes the bundle's CUDA and driver minimum, so a CUDA 11.8 runtime under a
    CUDA 12 release must be refused as a CUDA 11.8 toolkit is."""
    version = dist_info.name.removesuffix(".dist-info").partition("-")[2]
    if not _VERSION.fullmatch(version):
        raise SourceError(f"{dist_info}: names no release (a folder pip writes is "
                          f"<package>-<version>.dist-info, e.g. {normalize(package)}"
                          "-12.4.127.dist-info)",
                          "give the site-packages folder pip installed the wheel into, "
                          "unchanged, or the wheel itself")
    major = tables.cuda.split(".")[0]
    if normalize(package).startswith(_CUDA_RUNTIME) and version.split(".")[0] != major:
        raise SourceError(f"{dist_info.parent}: holds the CUDA {version} runtime, but the "
                          f"release is built for CUDA {major}",
                          f"install a CUDA {major}.x runtime there (pip install "
                          f"{package}), or name the release for CUDA "
                          f"{version.split('.')[0]}")
    return version


def _installed_member(member: str, dist_info: str, folder: Path) -> str:
    """The pinned wheel's member in the installed release: its dist-info is named by
    the installed version; the libraries keep their paths, but for the one named after
    the CUDA minor (NVRTC's builtins), which is the installed minor's."""
    top, _, below = member.partition("/")
    if top.endswith(".dist-info"):
        return f"{dist_info}/{below}"
    prefix = _per_minor_prefix(_basename(member))
    if prefix and not (folder / member).exists():
        parent = (folder / member).parent
        found = sorted(p.name for p in parent.glob("*") if p.name.lower().startswith(prefix)
                       and _PER_MINOR.match(p.name)) if parent.is_dir() else []
        if len(found) == 1:
            return f"{member.rsplit('/', 1)[0]}/{found[0]}"
    return member


def _renamed(tables: RuntimeTables, sid: str, moved: Mapping[str, str]) -> RuntimeTables:
    """`tables` with source `sid`'s libraries that another release names otherwise (NVRTC's
    builtins of another minor) renamed: in the components, the files table and `loads`."""
    names = {_basename(old): _basename(new) for old, new in moved.items()
             if _basename(old) != _basename(new) and ".dist-info/" not in old}
    if not names:
        return tables
    refs = {f"{sid}:{old}": f"{sid}:{new}" for old, new in moved.items() if old != new}
    components = {name: {**c, "files": [refs.get(ref, ref) for ref in c["files"]]}
                  for name, c in tables.components.items()}
    files = {names.get(name, name): _unpinned(facts, names) if name in names else
             ({**facts, "loads": [names.get(n, n) for n in facts["loads"]]}
              if "loads" in facts else facts)
             for name, facts in tables.files.items()}
    return replace(tables, components=components, files=files)

