"""A recipe as bundler holds it: the frozen records `recipe/load.py` reads a recipe's
TOML into (its sources, files, components, signers) and the kinds of source.

The model imports nothing of the recipe package: the checks (recipe/checks.py) and the
loader (recipe/load.py) import it, and the loader imports the checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bundler.targets.registry import Platform, Trust, platform_for

LICENCE_COMPONENT = "licence"


@dataclass(frozen=True)
class SourceKind:
    """One kind of recipe source: everything bundler knows of the kind, asked by recipe,
    pack, the lock, init and inspect alike (tests/meta/test_records.py keeps it the one
    list). pack/sources gives each kind its reader: a Source class that names the
    records it reads (`Source.reads`)."""

    name: str                  # the recipe's [sources.ID] kind
    # What such an input is when found on disk: an "archive" (zip), a "wheel" or a
    # "folder" (what `bundler inspect` and `bundler init` tell apart).
    found_as: tuple[str, ...]
    # One file (a zip or a wheel): the lock pins the file's sha256, and a changed pin
    # is a changed input. A folder is pinned by its members' digest instead, which
    # follows a recipe that takes other members from it.
    one_file: bool
    # The recipe keys such a source must have, and the hint that names them.
    required: tuple[str, ...] = ()
    required_hint: str = ""
    takes_platform_tag: bool = False   # a wheel: its tag defaults to the platform's
    # How `bundler init` names such an input to a person, and its example path.
    described: Callable[[SourceSpec], str] = field(default=lambda spec: "", compare=False)
    example: Callable[[SourceSpec, str], str] = field(default=lambda spec, cuda: "",
                                                      compare=False)


def _named_wheel(spec: SourceSpec) -> str:
    return f"the wheel {spec.package} {spec.version}".strip()


def _named_zip(spec: SourceSpec) -> str:
    return f"NVIDIA's zip {spec.file_name}" if spec.file_name else "NVIDIA's zip"


def _file_example(spec: SourceSpec, cuda: str) -> str:
    return f"downloads/{spec.file_name or spec.id + '.zip'}"


ARCHIVE = SourceKind("archive", ("archive", "wheel"), one_file=True,   # a wheel is a zip too
                     described=_named_zip, example=_file_example)
TOOLKIT = SourceKind(
    "toolkit", ("folder",), one_file=False,
    described=lambda spec: "a CUDA toolkit folder",
    example=lambda spec, cuda: f"C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v{cuda}")
FOLDER = SourceKind("folder", ("folder",), one_file=False,
                    described=lambda spec: "a folder holding " + ", ".join(spec.contents[:3]),
                    example=lambda spec, cuda: f"{spec.id}-folder")
WHEEL = SourceKind("wheel", ("wheel",), one_file=True, required=("package", "version"),
                   required_hint='add package = "nvidia-..." and version = "..." (and '
                   "sha256, to let bundler fetch it)", takes_platform_tag=True,
                   described=_named_wheel, example=_file_example)

# The one list of source kinds, by name.
SOURCE_KINDS: dict[str, SourceKind] = {kind.name: kind for kind in (ARCHIVE, TOOLKIT, FOLDER,
                                                                    WHEEL)}


@dataclass(frozen=True)
class SourceSpec:
    """What a recipe knows of one input: its kind, how to recognise it, what it holds."""

    id: str
    kind: str
    contents: tuple[str, ...]
    file_name: str = ""
    # Members the input holds that are checked only when a selected component takes
    # them (a toolkit's math libraries: an install without them still packs cuDNN).
    optional_contents: tuple[str, ...] = ()
    sha256: str = ""
    root: str = ""
    env: tuple[str, ...] = ()
    package: str = ""
    version: str = ""
    platform_tag: str = ""
    signed_by: str = ""   # who must have signed its DLLs (a [signers] name); "" for no one
    # The signature is checked where the file carries one (an era whose signing is not
    # known: an unsigned file passes, a file signed by anyone else does not).
    signature_optional: bool = False
    pin_source: str = ""  # who published the sha256 pin (shown by the pack summary)

    @property
    def source_kind(self) -> SourceKind:
        """Its kind's record (the recipe loader refused a kind not in SOURCE_KINDS)."""
        return SOURCE_KINDS[self.kind]

    @property
    def trust(self) -> str:
        """How an input of this source is vouched for, in the pack summary's words."""
        if self.sha256:
            return f"pinned by sha256 ({self.pin_source})" if self.pin_source else \
                "pinned by sha256"
        if self.signed_by and not self.signature_optional:
            return f"verified by {self.signed_by}'s signature (no published sha256)"
        return "trusted on first pack: its sha256 is pinned in the lock from now on"


@dataclass(frozen=True)
class RuntimeFile:
    """One file that ships in the runtime folder, and where it comes from."""

    name: str
    source: str
    member: str
    component: str
    version: str = ""
    loads: tuple[str, ...] = ()
    signed_by: str = ""   # who must have signed it (a [signers] name); "" for no one
    signature_optional: bool = False   # its source's: checked only where present
    # What its export cudnnGetVersion returns (read from the code, not run); 0: unchecked.
    cudnn_get_version: int = 0
    # An era whose files bundler never saw: code it cannot read is noted, not refused.
    cudnn_get_version_where_readable: bool = False


@dataclass(frozen=True)
class Component:
    name: str
    files: tuple[str, ...]
    requires: tuple[str, ...]
    description: str = ""   # shown by `bundler recipes NAME`
    # In the selection a spec without `components` gets. The math libraries are not:
    # they come in when asked for or when the app scan finds the app needs them.
    default: bool = True


@dataclass(frozen=True)
class Recipe:
    name: str
    platform: str
    description: str
    cudnn: str
    cuda: str
    min_driver: str
    sources: dict[str, SourceSpec]
    components: dict[str, Component]
    files: dict[str, RuntimeFile]
    licences: tuple[RuntimeFile, ...]
    path: Path
    sha256: str
    # The oldest driver that runs this CUDA under minor-version compatibility (some
    # features, e.g. PTX JIT of newer code, need min_driver). Where given, the driver
    # check requires this and notes a driver below min_driver; else it requires min_driver.
    min_driver_compat: str = ""
    # Who signs what: a signer's name (the leaf's common name) -> the roots its chain and
    # its timestamps must reach (bundler/windows/roots.toml has the certificates).
    signers: dict[str, Trust] = field(default_factory=dict)
    text: bytes = field(default=b"", repr=False)   # the TOML it was read from

    def trust_for(self, runtime_file: RuntimeFile) -> Trust | None:
        """What must have signed the file, or None when the recipe asks no signature."""
        return self.signers[runtime_file.signed_by] if runtime_file.signed_by else None

    @property
    def target(self) -> Platform:
        """The platform its files are for (validated when the recipe was read)."""
        return platform_for(self.platform)

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".")[0])

    def select(self, wanted: list[str] | None) -> list[Component]:
        """The wanted components (default: the default ones), everything they require
        and what their libraries load at their first call, in recipe order
        (recipe/selection.py)."""
        # Imported here: selection reads this model, and the model must import nothing
        # of the recipe package back (tests/meta/test_records.py).
        from bundler.recipe.selection import selected
        return selected(self, wanted)

    def supplier_of(self, dll: str) -> RuntimeFile | None:
        """The runtime file of that name (as its platform compares names), if any."""
        same = self.target.same_name
        return next((f for f in self.files.values() if same(f.name, dll)), None)

    def files_for(self, components: list[Component]) -> list[RuntimeFile]:
        """Runtime files of the components, then the licences of the sources they use."""
        files = [self.files[name] for c in components for name in c.files]
        used_sources = {f.source for f in files}
        return files + [lic for lic in self.licences if lic.source in used_sources]


def required_trust(name: str, recipes: tuple[Recipe, ...] | list[Recipe]) -> Trust | None:
    """Who must have signed a runtime file of this name, by the first recipe that ships
    one and asks a signature (Windows file names ignore case); None if none asks."""
    for recipe in recipes:
        for runtime_file in recipe.files.values():
            if recipe.target.same_name(runtime_file.name, name) and runtime_file.signed_by:
                return recipe.trust_for(runtime_file)
    return None
