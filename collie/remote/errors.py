"""Why a remote host could not be used: one :class:`HostError` per failure, with a kind and one sentence.

A :class:`HostError` is about one host (unreachable, refused, an agent that died); it is a
:class:`~collie.errors.CollieError`, so a command that cannot go on without the host ends with its sentence and
exit 2, while ``collie hosts check`` reports it in its table instead.
"""

from __future__ import annotations

from enum import Enum

from collie.errors import CollieError


class Failure(Enum):
    """What went wrong with a host, from the network up to the agent."""

    UNREACHABLE = "unreachable"  # no TCP connection (refused, no route, name not resolved)
    TIMEOUT = "timeout"  # connected but no answer in time (SSH handshake or an agent request)
    HOST_KEY_UNKNOWN = "host-key-unknown"  # the host's key is in no known_hosts file
    HOST_KEY_CHANGED = "host-key-changed"  # the host offers another key than the one recorded
    AUTH = "auth"  # the server refused every key we have
    SSH = "ssh"  # another SSH-level failure (channel refused, protocol error)
    AGENT_MISSING = "agent-missing"  # ``python3 -m collie.agent`` did not start on the host
    AGENT_DEPS = "agent-deps"  # the host's python3 lacks a module the agent needs (or is too old)
    DEPLOY = "deploy"  # deploying collie to the host over SFTP failed
    AGENT_EXITED = "agent-exited"  # the agent's channel closed before it answered
    VERSION = "version"  # the agent speaks another protocol version or runs another collie
    PROTOCOL = "protocol"  # the agent answered something that is not a reply to the request
    PORT = "port"  # the host's RDMA port is not ACTIVE, or its GID index holds no GID
    AGENT_ERROR = "agent-error"  # the agent answered with an error (its target or collector failed)
    BROKEN = "broken"  # an earlier failure left this agent's channel unusable


class HostError(CollieError):
    """A host could not be used; ``str(exc)`` is one sentence naming the host.

    Attributes:
        host: the inventory name of the host.
        failure: what kind of failure.
        reason: the sentence without the host's name.
    """

    def __init__(self, host: str, failure: Failure, reason: str) -> None:
        super().__init__(f"host {host!r}: {reason}")
        self.host = host
        self.failure = failure
        self.reason = reason
