"""The directory, timeline and reconnect scenarios again, through a fake relay, end to end encrypted.

The tests are those of ``test_directories`` and ``test_timeline``, collected here a second time
with ``make_client`` defaulting to the relay: every client is given only the fake daemon's
pairing-offer link and reaches it through a :class:`~daemon_client.testing.FakeRelay`, on every
host kind the originals cover. Reconnect scenarios drop the daemon's data sockets, which the
relay turns into close 1012 for the client.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from daemon_client import Client
from daemon_client.testing import FakeDaemon

from ..api.agents import test_timeline as timeline
from ..subscriptions import test_directories as directories

pytest.importorskip("nacl", reason="relay tests need the relay extra (PyNaCl)")

connected = directories.connected
setup = timeline.setup


@pytest.fixture
def make_client(make_client: Callable[..., Client]) -> Callable[..., Client]:
    """The shared ``make_client``, through the relay unless a test names another transport."""

    def make(fake: FakeDaemon, transport: str = "relay", **options: object) -> Client:
        return make_client(fake, transport, **options)

    return make


test_plain_list_creates_no_observation = directories.test_plain_list_creates_no_observation
test_observation_gets_snapshot_then_updates = directories.test_observation_gets_snapshot_then_updates
test_capable_observations_are_independent = directories.test_capable_observations_are_independent
test_legacy_hosts_share_one_slot = directories.test_legacy_hosts_share_one_slot
test_reconnect_gives_a_new_id_and_snapshot_before_updates = (
    directories.test_reconnect_gives_a_new_id_and_snapshot_before_updates
)
test_agent_handle_follows_its_agent = directories.test_agent_handle_follows_its_agent
test_close_releases_owned_observations = directories.test_close_releases_owned_observations

test_ready_and_live_events = timeline.test_ready_and_live_events
test_two_handles_on_one_agent_and_release_of_one = timeline.test_two_handles_on_one_agent_and_release_of_one
test_subscription_restored_after_reconnect = timeline.test_subscription_restored_after_reconnect
test_paging_reads_a_long_history_exactly_once_each_way = timeline.test_paging_reads_a_long_history_exactly_once_each_way
test_stream_pulls_updates_on_the_callers_thread = timeline.test_stream_pulls_updates_on_the_callers_thread
