"""The OAuth client scenarios of @modelcontextprotocol/conformance about the client's identity
(metadata documents, token endpoint authentication, pre-registration, client credentials,
cross-app access) against hostlink's client."""

from __future__ import annotations

import pytest

from auth_conformance_support import CLIENT_IDENTITY, run_scenario
from peers import conformance_node

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("keyring_required", "no_browser", "isolated_state")]


@pytest.mark.parametrize("scenario", CLIENT_IDENTITY)
def test_auth_scenario(scenario, tmp_path):
    run_scenario(conformance_node(), scenario, tmp_path)
