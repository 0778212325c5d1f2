"""Running one call in a forked child, for the tests of what a client does after a fork."""

from __future__ import annotations

import os
from collections.abc import Callable


def raises_in_a_forked_child(call: Callable[[], object], error: type[BaseException]) -> bool:
    """Whether ``call()``, run in a child forked from this process, raised ``error`` (the child exits at once,
    without running the parent's cleanup)."""
    pid = os.fork()
    if pid == 0:
        code = 1  # returned, or raised something else
        try:
            call()
        except error:
            code = 0
        except BaseException:
            code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
