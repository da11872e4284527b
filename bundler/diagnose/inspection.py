"""`bundler inspect PATH`: what a DLL, a folder, a zip or a wheel holds, and what
each DLL needs to load.

For each DLL: machine, file and product version, exports, size, sha256, and its
dependencies — static and delay-load imports read from the file, plus the DLLs the
shipped recipes say it loads by name at run time (`loads`), which no import table
shows. Each dependency is marked:

bundled, system, driver or missing, as bundler.recipe.library_imports decides (the same
answer the packer and doctor get).

An archive or wheel also lists its members and which shipped recipe source it is.
"""

from __future__ import annotations

import os
import stat
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bundler.errors import BundlerError, CheckError
from bundler.recipe.library_imports import is_runtime_library, resolve_import
from bundler.recipe.load import SOURCE_KINDS, Recipe, required_trust, shipped_recipes
from bundler.support.hashing import PiggybackDigest, sha256_file, write_hashed
from bundler.support.text_tables import format_table, human_size
from bundler.support.wheel_names import normalize, wheel_name
from bundler.support.zip_reader import Member, Tap, ZipArchive
from bundler.targets.registry import (
    Platform,
    SignatureCheck,
    all_platforms,
    platform_for_wheel_tag,
    platform_of_file,
)


@dataclass(frozen=True)
class Dependency:
    name: str
    how: str      # "static", "delay" (delay-load import) or "runtime" (named by a recipe)
    status: str   # "bundled", "system", "driver" or "missing"
    note: str = ""


@dataclass(frozen=True)
class InspectedLibrary:
    name: str
    path: str      # the file, or the archive holding it
    member: str    # its name inside the archive; "" for a file on disk
    size: int
    sha256: str
    machine: str
    bits: int
    file_version: str
    product_version: str
    dependencies: tuple[Dependency, ...]
    exports: tuple[str, ...]
    error: str = ""   # why the facts are missing: not a valid DLL
    # For a DLL that imports CUDA/cuDNN DLLs (a framework's): per shipped recipe, the
    # components a bundle needs for it, or the DLLs that recipe lacks.
    bundle_needs: tuple[tuple[str, str], ...] = ()
    signature: SignatureCheck | None = None
    signature_required: str = ""   # the signer a shipped recipe asks for this name


@dataclass(frozen=True)
class RecipeMatch:
    recipe: str
    source: str
    by: tuple[str, ...]        # "sha256", "file name", "package", "contents"
    missing: tuple[str, ...]   # expected members it lacks (a partial match)


@dataclass(frozen=True)
class InspectReport:
    path: str
    kind: str      # "dll" (PE), "library" (ELF), "folder", "archive" or "wheel"
    size: int
    sha256: str    # of the archive or wheel; "" otherwise
    members: tuple[Member, ...]   # of an archive or wheel, by name
    dlls: tuple[InspectedLibrary, ...]
    matches: tuple[RecipeMatch, ...]


def classify(name: str, beside: set[str], recipes: tuple[Recipe, ...],
             platform: Platform) -> tuple[str, str]:
    """(status, note) of a dependency named `name`; `beside` holds names in the
    platform's name_key form (lower case on Windows)."""
    found = resolve_import(name, beside, recipes, platform)
    return found.status, found.note


def runtime_loads(name: str, version: str, recipes: tuple[Recipe, ...], api_version: int = 0
                  ) -> list[tuple[str, str]]:
    """(dll, recipe) pairs the recipes say `name` loads at run time. Recipes naming
    this exact version (in the version resource, or what cudnnGetVersion returns:
    `api_version`) are preferred (even when they say it loads nothing: another release
    of a DLL may load other things); otherwise every recipe that knows the name."""
    known = [(r, f) for r in recipes for f in r.files.values()
             if f.name.lower() == name.lower()]
    exact = [(r, f) for r, f in known if (f.version and f.version == version)
             or (f.cudnn_get_version and f.cudnn_get_version == api_version)]
    pairs: dict[str, str] = {}
    for recipe, runtime_file in exact or known:
        for loaded in runtime_file.loads:
            pairs.setdefault(loaded, recipe.name)
    return list(pairs.items())


def dll_facts(path: Path, beside: set[str], recipes: tuple[Recipe, ...], *,
              sha256: str = "", member: str = "", shown_path: str = "",
              platform: Platform) -> InspectedLibrary:
    """Facts about one library on disk (a DLL unless `platform` says otherwise).
    `sha256`, when known already, is not recomputed."""
    recipes = tuple(r for r in recipes if r.platform == platform.name)
    name = PurePosixPath(member).name if member else path.name
    size = path.stat().st_size
    digest = sha256 or sha256_file(path)
    try:
        info = platform.read_library(path, exports=True)
    except CheckError as exc:
        return InspectedLibrary(name, shown_path or str(path), member, size, digest, "", 0, "", "",
                        (), (), error=exc.message)
    dependencies = [Dependency(i, how, *classify(i, beside, recipes, platform))
                    for how, names in (("static", info.imports), ("delay", info.delay_imports))
                    for i in names]
    api_version = platform.returned_constant(path, "cudnnGetVersion") \
        if "cudnnGetVersion" in info.exports else None
    for loaded, recipe in runtime_loads(name, info.file_version, recipes, api_version or 0):
        status, _ = classify(loaded, beside, recipes, platform)
        dependencies.append(Dependency(loaded, "runtime", status, f"named by recipe {recipe}"))
    required, signature = judge_signature(path, name, recipes, platform)
    return InspectedLibrary(name=name, path=shown_path or str(path), member=member, size=size,
                    sha256=digest, machine=info.machine, bits=info.bits,
                    file_version=info.file_version, product_version=info.product_version,
                    dependencies=tuple(dependencies), exports=info.exports,
                    bundle_needs=bundle_needs(name, info.all_imports, recipes, platform),
                    signature=signature, signature_required=required)


def bundle_needs(name: str, imports: tuple[str, ...], recipes: tuple[Recipe, ...],
                 platform: Platform) -> tuple[tuple[str, str], ...]:
    """What a bundle must hold for a library of `platform` importing CUDA/cuDNN
    libraries, per recipe (`recipes`: that platform's): the components (with what they
    require) the pack's app scan would select, or what the recipe lacks. Empty for the
    runtime's own libraries (a recipe ships them)."""
    wanted = [i for i in imports if is_runtime_library(i, platform)]
    if not wanted or any(r.supplier_of(name) for r in recipes):
        return ()
    rows = []
    for recipe in recipes:
        lacking = [i for i in wanted if recipe.supplier_of(i) is None]
        if lacking:
            rows.append((recipe.name, f"lacks {', '.join(lacking)}"))
            continue
        components = recipe.select(sorted({recipe.supplier_of(i).component  # type: ignore[union-attr]
                                           for i in wanted}))
        rows.append((recipe.name, ", ".join(c.name for c in components)))
    return tuple(rows)


def judge_signature(path: Path, name: str, recipes: tuple[Recipe, ...],
                    platform: Platform) -> tuple[str, SignatureCheck | None]:
    """(the signer a recipe asks for `name`, or ""; the file's signature judged against
    that signer, or against any signer reaching a root bundler carries; None on a
    platform without code signing)."""
    if not platform.signature_scheme:
        return "", None
    trust = required_trust(name, recipes)
    return (trust.signer if trust else "",
            platform.check_signature(path, trust or platform.any_shipped_signer()))


def inspect_path(path: Path, recipes: tuple[Recipe, ...] | None = None) -> InspectReport:
    recipes = tuple(shipped_recipes()) if recipes is None else recipes
    if path.is_dir():
        return _inspect_folder(path, recipes)
    if not path.is_file():
        raise BundlerError(f"{path}: {_not_a_file(path)}",
                           "give a DLL, a folder, a zip archive or a wheel")
    if path.suffix.lower() in (".zip", ".whl") or zipfile.is_zipfile(path):
        return _inspect_archive(path, recipes)
    platform = platform_of_file(path)
    if platform is not None:
        beside = {platform.name_key(p.name)
                  for p in _libraries_in(path.parent, platform, recursive=False)}
        facts = dll_facts(path, beside, recipes, platform=platform)
        if facts.error:
            raise CheckError(facts.error, "inspect a DLL, a folder, a zip archive or a wheel")
        # "dll" for a PE file, "library" for an ELF one (docs/formats.md, "inspect --json").
        return InspectReport(str(path), platform.library_word.lower(), facts.size, "", (),
                             (facts,), ())
    raise CheckError(f"{path}: not a DLL, a shared library, a zip archive or a wheel",
                     "inspect a DLL or .so file, a folder, a zip archive or a wheel")


def _not_a_file(path: Path) -> str:
    """What is at `path` that is neither a file nor a folder (a FIFO was said to be "no
    such file"), without opening it: a pipe would block the open."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return ("a link to nothing" if os.path.islink(path) else
                "no such file or folder")
    except OSError as exc:
        return f"cannot be looked at ({exc.strerror})"
    for test, what in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return f"{what}, not a file: not read"
    return "not a regular file: not read"


def _libraries_in(folder: Path, platform: Platform, recursive: bool) -> list[Path]:
    found = folder.rglob("*") if recursive else folder.iterdir()
    return sorted((p for p in found if platform.is_library(p.name) and p.is_file()),
                  key=lambda p: p.as_posix().lower())


def _inspect_folder(folder: Path, recipes: tuple[Recipe, ...]) -> InspectReport:
    dlls: tuple[InspectedLibrary, ...] = ()
    for platform in all_platforms():   # a folder of DLLs, of .so files, or of both
        paths = _libraries_in(folder, platform, recursive=True)
        beside = {platform.name_key(p.name) for p in paths}
        dlls += tuple(dll_facts(p, beside, recipes, platform=platform) for p in paths)
    matches = match_recipes("folder", folder.name, "", lambda m: (folder / m).is_file(),
                            recipes)
    return InspectReport(str(folder), "folder", sum(d.size for d in dlls), "", (), dlls,
                         tuple(matches))


def _inspect_archive(path: Path, recipes: tuple[Recipe, ...]) -> InspectReport:
    kind = "wheel" if path.suffix.lower() == ".whl" else "archive"
    # The archive's sha256 from the member reads below plus what they skip: a wheel
    # of 700 MB is nearly all DLLs, read once instead of twice.
    digest = PiggybackDigest(path)
    with ZipArchive(path) as archive:
        names = sorted(archive.members)
        members = tuple(archive.members[n] for n in names)
        # Each member is read as the library of the platform its wheel's tag names
        # (a manylinux wheel's .so files), else of the platform its name is a library of.
        member_platform = {n: p for n in names
                           if (p := _member_platform(path.name, PurePosixPath(n).name))}
        dll_members = [n for n in names if n in member_platform]
        beside = {member_platform[n].name_key(PurePosixPath(n).name) for n in dll_members}
        in_file_order = sorted(dll_members, key=lambda n: archive.members[n].header_offset)
        facts = {m: _member_facts(archive, m, beside, recipes, digest.see, member_platform[m])
                 for m in in_file_order}
        dlls = tuple(facts[m] for m in dll_members)
    sha256 = digest.hexdigest()
    present = set(names)
    matches = match_recipes(kind, path.name, sha256, present.__contains__, recipes)
    return InspectReport(str(path), kind, path.stat().st_size, sha256, members, dlls,
                         tuple(matches))


def _member_platform(archive_name: str, member_name: str) -> Platform | None:
    """The platform whose library a member is: its wheel's tag says, else its name."""
    wheel = wheel_name(archive_name)
    tagged = [p for p in (platform_for_wheel_tag(t) for t in wheel.platforms) if p] \
        if wheel else []
    candidates = tagged or list(all_platforms())
    return next((p for p in candidates if p.is_library(member_name)), None)


def _member_facts(archive: ZipArchive, member: str, beside: set[str],
                  recipes: tuple[Recipe, ...], tap: Tap, platform: Platform
                  ) -> InspectedLibrary:
    """Unpack one member to a temporary file (CRC checked, hashed on the way), read it.
    `tap` sees the archive's bytes the read takes."""
    with tempfile.TemporaryDirectory(prefix="bundler-inspect-") as folder:
        target = Path(folder) / PurePosixPath(member).name
        with open(target, "wb") as out:
            _, sha256 = write_hashed(archive.read_chunks(member, tap), out)
        return dll_facts(target, beside, recipes, sha256=sha256, member=member,
                         shown_path=str(archive.path), platform=platform)


def match_recipes(kind: str, file_name: str, sha256: str, has: Callable[[str], bool],
                  recipes: tuple[Recipe, ...]) -> list[RecipeMatch]:
    """The recipe sources this input is: by pinned sha256, file name, wheel package,
    or holding every member the source lists. A match by name that lacks members is
    reported with what it lacks (a damaged or wrong download)."""
    return [match for recipe in recipes for match in _source_matches(
        recipe, kind, file_name, sha256, has)]


def _source_matches(recipe: Recipe, kind: str, file_name: str, sha256: str,
                    has: Callable[[str], bool]) -> Iterator[RecipeMatch]:
    for source in recipe.sources.values():
        if kind not in SOURCE_KINDS[source.kind].found_as:
            continue
        by = []
        if source.sha256 and source.sha256 == sha256:
            by.append("sha256")
        if source.file_name and source.file_name.lower() == file_name.lower():
            by.append("file name")
        if kind == "wheel" and source.package and _is_wheel_of(file_name, source.package,
                                                                source.version):
            by.append("package")
        prefix = f"{source.root.strip('/')}/" if source.root else ""
        missing = tuple(m for m in source.contents if not has(prefix + m))
        if source.contents and not missing:
            by.append("contents")
        if by:
            yield RecipeMatch(recipe.name, source.id, tuple(by), missing)


def _is_wheel_of(file_name: str, package: str, version: str) -> bool:
    name = wheel_name(file_name)
    return (name is not None and normalize(name.distribution) == normalize(package)
            and (not version or name.version == version))


def render(report: InspectReport) -> list[str]:
    lines = [_headline(report)]
    for match in report.matches:
        lacking = (f"; but lacks {len(match.missing)} member(s): "
                   f"{', '.join(match.missing[:5])}" if match.missing else "")
        lines.append(f"  is recipe {match.recipe}, source '{match.source}' "
                     f"(matched by {', '.join(match.by)}){lacking}")
    if report.kind in ("archive", "wheel") and not report.matches:
        lines.append("  matches no shipped recipe source")
    if report.members:
        lines += ["", "members:"]
        lines += format_table(("size", "name"), ((human_size(m.size), m.name)
                                                 for m in report.members))
    for dll in report.dlls:
        lines += ["", *_render_dll(dll)]
    return lines


def _headline(report: InspectReport) -> str:
    if report.kind in ("dll", "library"):   # a DLL, or an ELF shared library
        return f"{report.path}: {'DLL' if report.kind == 'dll' else 'shared library'}"
    if report.kind == "folder":
        return (f"{report.path}: folder, {len(report.dlls)} {_folder_word(report.dlls)}, "
                f"{human_size(report.size)}")
    return (f"{report.path}: {'wheel' if report.kind == 'wheel' else 'zip archive'}, "
            f"{len(report.members)} members, {human_size(report.size)}, "
            f"sha256 {report.sha256}")


def _folder_word(libraries: tuple[InspectedLibrary, ...]) -> str:
    """What a folder's libraries are called: by the word of the first platform (in the
    order inspect tries them) whose library names they all carry ("DLLs", "libraries";
    an empty folder's is the first platform's), "libraries" where the folder holds
    several platforms' libraries; singular for one. Only words: no platform is told
    apart by its word."""
    named = next((p for p in all_platforms()
                  if all(p.is_library(d.name) for d in libraries)), None)
    word = named.library_word if named is not None else "library"
    if len(libraries) == 1:
        return word
    return f"{word[:-1]}ies" if word.endswith("y") else f"{word}s"


def _signature_text(dll: InspectedLibrary) -> str:
    found = dll.signature
    if found is None:
        return "(not checked)"
    wanted = (f" (recipes ask for {dll.signature_required!r})" if dll.signature_required
              else "")
    return f"{found.status}: {found.describe()}{wanted}"


def _render_dll(dll: InspectedLibrary) -> list[str]:
    lines = [f"{dll.member or dll.name}" + (f"  ({dll.path})" if dll.member else "")]
    if dll.error:
        return lines + [f"  error: {dll.error}"]
    shown = ", ".join(dll.exports[:6]) + (", ..." if len(dll.exports) > 6 else "")
    lines += format_table(("", ""), (
        ("machine", f"{dll.machine} ({dll.bits}-bit)" if dll.bits else dll.machine),
        ("file version", dll.file_version or "(none)"),
        ("product version", dll.product_version or "(none)"),
        ("size", f"{human_size(dll.size)} ({dll.size} bytes)"),
        ("sha256", dll.sha256),
        ("signature", _signature_text(dll)),
        ("exports", f"{len(dll.exports)}" + (f": {shown}" if shown else ""))),
        show_headers=False)
    if dll.dependencies:
        lines.append("  dependencies:")
        lines += format_table(("name", "how", "status", "note"), (
            (d.name, d.how, d.status, d.note) for d in dll.dependencies), indent="    ")
    else:
        lines.append("  dependencies: none")
    if dll.bundle_needs:
        lines.append("  a bundle for it needs (bundler pack selects them by itself):")
        lines += format_table(("recipe", "components"), dll.bundle_needs, indent="    ")
    return lines
