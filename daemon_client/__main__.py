"""``python -m daemon_client``: the ``daemon-client`` command."""

import sys

from daemon_client.cli.main import main

sys.exit(main())
