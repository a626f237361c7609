"""On a test daemon's PYTHONPATH (`ollie.testing.nethosts.env`): its egress proxy resolves the test's host names."""

import os

if os.environ.get("OLLIE_TEST_NET_HOSTS"):
    from ollie.testing import nethosts

    nethosts.from_env()
