"""The OAuth client scenarios of @modelcontextprotocol/conformance against hostlink's client:
discovery (this module; the scopes and the client's identity are in the two beside it), and
that the three modules together run every auth scenario the harness lists."""

from __future__ import annotations

import pytest

from auth_conformance_support import CLIENT_IDENTITY, DISCOVERY, SCOPES, listed_scenarios, run_scenario
from peers import conformance_node

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("keyring_required", "no_browser", "isolated_state")]


def test_the_scenario_list_is_the_harness_list():
    assert sorted(DISCOVERY + SCOPES + CLIENT_IDENTITY) == listed_scenarios(conformance_node())


@pytest.mark.parametrize("scenario", DISCOVERY)
def test_auth_scenario(scenario, tmp_path):
    run_scenario(conformance_node(), scenario, tmp_path)
