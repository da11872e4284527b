"""Knowledge of Windows, its DLLs and NVIDIA's drivers: PE reading (pe_file.py), what
every Windows machine has (facts.py, windows.toml), which driver runs which CUDA and
what each framework loads (compat.py, compat.toml), and where an import resolves
(imports.py)."""
