"""What ships inside every packed app: the bootstrap, standard library only, assembled
by `bundler pack` (pack/emit.py) into one file from these pieces, in this order:
rules.py (what doctor shares), common.py (the app's folders, the manifest's reader, the
error), the loader of the app's platform (loader_windows.py or loader_linux.py) and
activation.py (activate(), report()). bundler itself imports rules.py (doctor, verify
--run) and loader_windows.py (the driver as the bootstrap finds it); none of the pieces
activates anything when imported as part of this package."""
