"""Adapters that plug aster-persist into agent frameworks, one module per framework, each
a client of the running daemon (through `aster_persist.client`, never a server module)
and each behind an optional extra: importing a module loads its framework, importing
this package loads none."""
