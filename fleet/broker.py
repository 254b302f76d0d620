"""kombu's filesystem transport (the broker of ``make run`` and of one-machine installs) with messages
written atomically.

kombu 5.x's ``filesystem`` transport writes a message by opening its final ``*.msg`` name and then
writing the body (``Channel._put``), while a consumer lists the folder, moves any ``*.msg`` file away and
reads it without a lock (``Channel._get``). A consumer that takes a file between the open and the write
reads an empty body, and ``json.loads("")`` is an unrecoverable error that stops the worker (seen in
tests/test_celery_worker.py with beat embedded in the worker; celery/kombu#1551, open since 2022). This
channel writes the body to a temporary name the consumer never picks up (no ``.msg`` suffix) in the same
folder and renames it into place (``os.replace``: atomic on one filesystem), so a ``*.msg`` file is whole
from the moment it exists. Everything else is kombu's. ``fleet.project.celery`` registers it under the
``filesystem`` scheme, so every ``filesystem://`` URL uses it."""

from __future__ import annotations

import contextlib
import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

#: The scheme and class kombu resolves ``filesystem://`` to once registered (``kombu.transport.TRANSPORT_ALIASES``).
ALIAS = ("filesystem", "fleet.broker:FilesystemTransport")


class FilesystemChannel(filesystem.Channel):
    """kombu's filesystem channel; a message's file appears whole (written under a temporary name, renamed)."""

    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        # The name kombu gives (time-ordered, the queue after the first dot): consumers sort and match on it.
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".partial-{uuid.uuid4().hex}")
        try:
            with open(partial, "wb", buffering=0) as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class FilesystemTransport(filesystem.Transport):
    """kombu's filesystem transport with ``FilesystemChannel``."""

    Channel = FilesystemChannel
