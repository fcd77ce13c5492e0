"""Fixtures of the adapters' tests."""

import os

import pytest


@pytest.fixture(scope="session")
def litellm():
    """litellm, imported by the tests that drive it: seconds of import that the other test files'
    workers need not pay when they collect the suite."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches a price list at import otherwise
    import litellm

    return litellm


@pytest.fixture(scope="session")
def register(litellm):
    """The LiteLLM host's `register` (its module subclasses litellm's `CustomLLM`)."""
    from hostlink.adapters.litellm import register

    return register
