"""The binding's exceptions (docs/python.md, "Errors")."""


class TilecError(Exception):
    """Any failure of tilec: the library missing, a context that cannot be made, a bad option.

    ``status`` is the C API's status name ("TL_ERR_NO_DRIVER", ...) when the error came from a C
    call, else None.
    """

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        self.status = status


class CompileError(TilecError):
    """The source has errors (TL_ERR_COMPILE). ``str(e)`` is the diagnostics as tilec renders them
    (``file:line:col: error: ...``, the line, a caret); ``diagnostics`` the same as records
    ``(severity, file, line, column, message)``, severity being "error", "warning" or "note"."""

    def __init__(self, message, diagnostics=(), status="TL_ERR_COMPILE"):
        super().__init__(message, status)
        self.diagnostics = list(diagnostics)


class LaunchError(TilecError):
    """A launch was refused (arguments that do not fit the kernel: TL_ERR_BAD_ARGUMENT, with
    tl_launch's message naming the argument) or failed (on the CPU device a check of the
    interpreter, TL_ERR_KERNEL_FAILED; a variant that does not compile, TL_ERR_COMPILE)."""


class KernelNotFound(TilecError, KeyError):
    """``module[name]`` for a kernel the module does not have; the message lists those it has."""

    def __str__(self):  # KeyError would print the repr of the message
        return self.message
