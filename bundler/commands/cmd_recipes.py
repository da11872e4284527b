"""`bundler recipes [NAME]`: the recipes and releases bundler knows, or one of them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bundler.commands.options import add_json
from bundler.commands.recipes_for import add_options, framework_query, run_for
from bundler.errors import EXIT_OK, RecipeError, RefusedError, SpecError
from bundler.pack.signatures import ladder
from bundler.recipe.load import Recipe, find_recipe, shipped_recipes
from bundler.recipe.selection import completions
from bundler.releases.catalogue import Release, family_counts, find_release, matching_releases


def add_parser(commands: argparse._SubParsersAction,
               shared: argparse.ArgumentParser) -> argparse.ArgumentParser:
    r = commands.add_parser("recipes", parents=[shared],
                            help="list the recipes and releases bundler knows, or show one",
                            description="Without NAME: every shipped recipe with its cuDNN, "
                            "CUDA and platform, and the release families. With a family "
                            "(cudnn9) or a version prefix (9.1): the releases it has. With "
                            "a name: its sources (and how each is trusted), components (what "
                            "each requires) and driver minimum. With --for FRAMEWORK[==VERSION] "
                            "...: the releases that serve them (bundler recipes onnxruntime-gpu"
                            "==1.20.0 says the same).")
    r.add_argument("name", nargs="?", metavar="NAME",
                   help="a recipe or release name (cudnn-9.1.0.70-cuda12-win-x64), a family "
                   "(cudnn9), a version prefix (9.1), or a recipe file")
    r.add_argument("--write", metavar="FILE", help="with NAME: write the recipe to FILE, to "
                   "edit (e.g. to pair other CUDA wheels) and name in a spec")
    add_json(r, "print the recipe(s) as JSON")
    add_options(r)
    return r


def run(args: argparse.Namespace) -> int:
    if args.for_:
        if args.name:
            raise SpecError(f"NAME {args.name} and --for: give one", "bundler recipes "
                            "--for FRAMEWORK[==VERSION] ... lists the releases serving them")
        return run_for(args.for_, args)
    if args.name and not args.write and framework_query(args.name, args.platform) \
            and matching_releases(args.name) is None and not Path(args.name).is_file() \
            and not args.name.startswith("cudnn-"):
        return run_for([args.name], args)   # `bundler recipes onnxruntime-gpu==1.20.0`
    if args.name and not args.write:
        releases = matching_releases(args.name)
        if releases is not None and not find_release(args.name):
            return _list_releases(args.name, releases, args.json)
    if args.name:
        recipe = find_recipe(args.name, Path.cwd())
        if args.write:
            return _write_recipe(recipe, Path(args.write))
        if args.json:
            print(json.dumps(_recipe_summary(recipe), indent=2))
            return EXIT_OK
        _show_recipe(recipe)
        return EXIT_OK
    recipes = shipped_recipes()
    if args.json:
        print(json.dumps([_recipe_summary(r) for r in recipes], indent=2))
        return EXIT_OK
    for recipe in recipes:
        print(f"{recipe.name:40} cuDNN {recipe.cudnn:10} CUDA {recipe.cuda:6} "
              f"{recipe.platform}")
    print("\nand every release of the catalogue, by name "
          "(cudnn-<version>-cuda<CUDA>-win-x64 or -linux-x64):")
    for family, count, first, last in family_counts():
        print(f"  {family}: {count} releases, {first} ... {last}")
    print("list a family or a series with: bundler recipes cudnn9 | bundler recipes 9.1 | "
          "bundler recipes cudnn9-linux-x64")
    return EXIT_OK


def _show_recipe(recipe: Recipe) -> None:
    print(f"{recipe.name}: {recipe.description}")
    compat = (f" ({recipe.min_driver_compat} with minor-version compatibility)"
              if recipe.min_driver_compat else "")
    print(f"  platform {recipe.platform}; cuDNN {recipe.cudnn}; CUDA {recipe.cuda}; "
          f"driver >= {recipe.min_driver}{compat}")
    for source in recipe.sources.values():
        found_by = f" (found via {', '.join(source.env)})" if source.env else ""
        what = (f"{source.package}=={source.version}" if source.package
                else source.file_name)
        print(f"  source {source.id}: {source.kind} {what}{found_by}; "
              f"{ladder(recipe, source.id)}")
    for component in recipe.components.values():
        requires = f" -> {', '.join(component.requires)}" if component.requires else ""
        print(f"  component {component.name}: {', '.join(component.files)}{requires}")
        if component.description:
            print(f"    {component.description}")
        brings = completions(recipe, [component.name])   # what it needs to work, and why
        if brings:
            print(f"    brings {'; '.join(f'{c} ({w[0]})' for c, w in brings.items())}")


def _list_releases(query: str, releases: list[Release], as_json: bool) -> int:
    if not releases:
        raise RecipeError(f"bundler knows no cuDNN release matching '{query}'",
                          "bundler recipes lists the families and their ranges")
    rows = [{"name": r.name, "cudnn": r.cudnn, "cuda": r.cuda,
             "wheel": r.wheel.file_name if r.wheel else "",
             "archives": [a.file_name for a in r.archives]} for r in releases]
    if as_json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    for row in rows:
        channels = (["PyPI wheel"] if row["wheel"] else []) + list(row["archives"])
        print(f"{row['name']:40} {', '.join(channels)}")
    return EXIT_OK


def _write_recipe(recipe: Recipe, path: Path) -> int:
    """The recipe as a file the user can edit and name in a spec (recipe = "FILE")."""
    if path.exists():
        raise RefusedError(f"{path} exists", "choose another file name, or remove it first")
    path.write_bytes(recipe.text)
    print(f"wrote {recipe.name} to {path}: name it in the spec as recipe = \"{path}\"")
    return EXIT_OK


def _recipe_summary(recipe: Recipe) -> dict:
    return {"name": recipe.name, "description": recipe.description,
            "platform": recipe.platform, "cudnn": recipe.cudnn, "cuda": recipe.cuda,
            "min_driver": recipe.min_driver, "min_driver_compat": recipe.min_driver_compat,
            "sources": {s.id: {"kind": s.kind, "package": s.package, "version": s.version,
                               "file_name": s.file_name, "sha256": s.sha256, "env": list(s.env)}
                        for s in recipe.sources.values()},
            "components": {c.name: {"files": list(c.files), "requires": list(c.requires),
                                    "description": c.description}
                           for c in recipe.components.values()}}
