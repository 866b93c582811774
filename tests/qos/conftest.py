"""The channel fixtures, shared with tests/channel."""

from tests.channel.conftest import (  # noqa: F401 - pytest finds fixtures by name
    channel,
    clock,
    factory,
    manual_channel,
    manual_factory,
)
