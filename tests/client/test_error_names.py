"""The client's errors are named apart from the server's, and loading the client does
not load the server's exception tree to read the problem type."""

from __future__ import annotations

import inspect
import subprocess
import sys
from types import ModuleType

import aster_persist.client
import aster_persist.client.errors
import aster_persist.errors
from aster_persist.schemas.problems import PROBLEM_MEDIA_TYPE, PROBLEM_TYPE


def exception_names(module: ModuleType, *, defined_here: bool = False) -> set[str]:
    """The names of the exception classes a module holds (or, with ``defined_here``,
    defines itself)."""
    return {
        name
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and (not defined_here or value.__module__ == module.__name__)
    }


def test_no_client_error_has_the_name_of_a_server_error() -> None:
    server = exception_names(aster_persist.errors, defined_here=True)
    assert {"AsterError", "NotFound", "Conflict", "Invalid"} <= server
    exported = {
        name
        for name in aster_persist.client.__all__
        if name in exception_names(aster_persist.client)
    }
    defined = exception_names(aster_persist.client.errors)
    assert {"ApiError", "NotFoundError", "InvalidRequestError"} <= exported
    assert exported <= defined
    assert defined & server == set()
    assert all(name.endswith("Error") for name in defined - {"DaemonUnavailable"}), defined


def test_every_status_with_a_class_maps_to_a_client_error() -> None:
    errors = aster_persist.client.errors
    for status, cls in errors._ERRORS.items():
        assert cls.status == status and issubclass(cls, errors.ApiError)
        assert cls.__name__ in aster_persist.client.__all__


def test_the_problem_constants_live_in_schemas_and_the_server_reexports_them() -> None:
    assert aster_persist.errors.PROBLEM_TYPE is PROBLEM_TYPE
    assert aster_persist.errors.PROBLEM_MEDIA_TYPE is PROBLEM_MEDIA_TYPE
    assert aster_persist.errors.problem_body(404, "x", "t", "d")["type"] == PROBLEM_TYPE + "x"


def test_importing_the_client_does_not_load_the_server_errors() -> None:
    code = (
        "import sys, aster_persist.client\n"
        "print('aster_persist.errors' in sys.modules, "
        "'aster_persist.schemas.problems' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"], out.stdout
