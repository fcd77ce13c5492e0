"""The disclosure guard on its own: both spellings of the private directory, whole or split."""

from __future__ import annotations

import pytest

from hostlink.claude_code.conversation import DisclosureGuard, PathDisclosed


@pytest.fixture
def linked(tmp_path):
    """A private directory reached through a symlink: its literal and resolved paths differ."""
    real = tmp_path / "real" / "claude-request-1"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    return tmp_path / "link" / "claude-request-1", real


def test_either_spelling_of_the_directory_is_refused(linked):
    literal, real = linked
    guard = DisclosureGuard(literal)
    for text in (f"see {literal}/catalog.json", f"see {real}/catalog.json"):
        assert guard.discloses(text)
        with pytest.raises(PathDisclosed) as caught:
            guard.check(text)
        assert caught.value.error.code == "private_path_disclosed"
    assert not guard.discloses(f"see {literal.parent}/other")
    guard.check("nothing private here")


@pytest.mark.parametrize("resolved", [False, True])
def test_a_path_split_across_pieces_is_refused(linked, resolved):
    literal, real = linked
    path = str(real if resolved else literal)
    guard = DisclosureGuard(literal)
    cut = len(path) // 2
    guard.check_piece("see " + path[:cut])
    with pytest.raises(PathDisclosed):
        guard.check_piece(path[cut:] + "/system-prompt.txt")


def test_many_harmless_pieces_pass(linked):
    literal, _ = linked
    guard = DisclosureGuard(literal)
    for piece in [str(literal.parent), "/", "claude-request-", "2"] * 50:
        guard.check_piece(piece)


# --- the answer to hostlink's initialize control request -------------------------------------


@pytest.mark.parametrize(("response", "message"), [
    ({"subtype": "success", "request_id": "someone-else", "response": {}},
     "claude answered a control request hostlink did not send"),
    ({"subtype": "error", "request_id": "hostlink-init", "error": "no"},
     "claude refused the initialize control request"),
    ({"subtype": "success", "request_id": "hostlink-init", "response": {"account": "max"}},
     "claude did not report its account"),
], ids=["not-ours", "refused", "no-account"])  # fmt: skip
def test_a_control_answer_hostlink_cannot_use_is_refused(response, message):
    from hostlink.claude_code.conversation import Expectation, validate_control_initialize
    from hostlink.claude_code.protocol import ProtocolError

    record = {"type": "control_response", "response": response}
    with pytest.raises(ProtocolError, match=f"^{message}$"):
        validate_control_initialize(record, "hostlink-init", Expectation(tools=(), mcp_servers=(), testing=False))
