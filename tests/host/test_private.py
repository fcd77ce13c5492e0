"""hostlink.host.private: permissions, markers, and stale recovery that touches only our own."""

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from hostlink.host import private
from hostlink.host.private import (
    MARKER,
    PrivateStateError,
    create_private_dir,
    recover_stale,
    remove_private_dir,
    runtime_root,
    write_private_file,
)


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "rt"))
    return runtime_root()


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def mark(path, pid, age=3600.0, package="hostlink"):
    path.mkdir(mode=0o700)
    marker = {"package": package, "pid": pid, "created": time.time() - age}
    (path / MARKER).write_text(json.dumps(marker))
    return path


def test_root_and_dirs_are_private(root):
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    path = create_private_dir("request")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    assert path.parent == root and path.name.startswith("request-")
    marker = json.loads((path / MARKER).read_text())
    assert marker["package"] == "hostlink" and marker["pid"] == os.getpid()
    file = write_private_file(path, "system-prompt.txt", "hello")
    assert stat.S_IMODE(os.stat(file).st_mode) == 0o600
    remove_private_dir(path)
    assert not path.exists()


def test_private_files_are_exclusive_and_never_follow_links(root, tmp_path):
    path = create_private_dir("request")
    write_private_file(path, "a", b"1")
    with pytest.raises(FileExistsError):
        write_private_file(path, "a", b"2")
    target = tmp_path / "outside"
    os.symlink(target, path / "link")
    with pytest.raises(OSError):  # noqa: PT011 - the OS's own refusal of the link, its text not ours
        write_private_file(path, "link", b"x")
    assert not target.exists()
    for bad in ("../escape", "", ".."):
        with pytest.raises(PrivateStateError):
            write_private_file(path, bad, b"x")


def test_root_that_is_a_symlink_is_refused(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "link"))
    with pytest.raises(PrivateStateError):
        runtime_root()


def test_stale_recovery_removes_only_our_dead_marked_dirs(root, tmp_path):
    gone = dead_pid()
    stale = mark(root / "request-stale", gone)
    unmarked = root / "request-unmarked"
    unmarked.mkdir()
    foreign_package = mark(root / "request-foreign", gone, package="someone-else")
    live = mark(root / "request-live", os.getppid())
    young = mark(root / "request-young", gone, age=1.0)
    mine = mark(root / "request-mine", os.getpid())
    corrupt = root / "request-corrupt"
    corrupt.mkdir()
    (corrupt / MARKER).write_text("{not json")
    oversized = mark(root / "request-oversized", gone)
    (oversized / MARKER).write_text(json.dumps({"package": "hostlink", "pid": gone, "created": 0, "x": "y" * 5000}))
    outside = mark(tmp_path / "elsewhere", gone)
    os.symlink(outside, root / "request-link")
    plain_file = root / "request-file"
    plain_file.write_text("x")

    assert recover_stale() == 1
    assert not stale.exists()
    for kept in (unmarked, foreign_package, live, young, mine, corrupt, oversized, outside, plain_file):
        assert kept.exists(), kept
    assert os.path.islink(root / "request-link")


def test_stale_recovery_skips_directories_of_another_user(root, monkeypatch):
    stale = mark(root / "request-other-user", dead_pid())
    monkeypatch.setattr(private.os, "getuid", lambda: os.stat(stale).st_uid + 1)
    assert recover_stale(root) == 0
    assert stale.exists()


def test_stale_recovery_is_bounded(root, monkeypatch):
    monkeypatch.setattr(private, "_RECOVERY_SCAN_LIMIT", 5)
    gone = dead_pid()
    for index in range(12):
        mark(root / f"request-{index:02d}", gone)
    assert recover_stale() <= 5
    assert len(os.listdir(root)) >= 7


def test_remove_refuses_what_is_not_a_directory(root):
    file = root / "file"
    file.write_text("x")
    with pytest.raises(PrivateStateError):
        remove_private_dir(file)
    remove_private_dir(root / "missing")  # already gone is fine


def test_the_root_is_the_users_runtime_dir_or_the_temp_dir_and_never_another_users(tmp_path, monkeypatch):
    monkeypatch.delenv("HOSTLINK_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    assert runtime_root() == tmp_path / "run" / "hostlink"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setattr(private.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    assert runtime_root() == tmp_path / "tmp" / f"hostlink-{os.getuid()}"
    monkeypatch.setattr(private.os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "run" / "hostlink"))
    with pytest.raises(PrivateStateError, match="the hostlink runtime directory belongs to another user"):
        runtime_root()


def test_a_replaced_file_that_cannot_take_its_place_leaves_no_temporary_behind(root):
    path = create_private_dir("request")
    (path / "report.json").mkdir()  # a directory where the file should go
    (path / "report.json" / "inside").write_text("x")
    with pytest.raises(OSError):  # noqa: PT011 - the OS's own refusal, its text not ours
        private.replace_private_file(path, "report.json", "{}")
    assert sorted(entry.name for entry in path.iterdir()) == [MARKER, "report.json"]


@pytest.fixture(scope="module")
def gone():
    return dead_pid()


@pytest.mark.parametrize("marker", [
    {}, {"pid": 0}, {"pid": True}, {"pid": "4242"}, {"created": "yesterday"}, {"created": False}, ["hostlink"],
])
def test_a_directory_whose_marker_is_malformed_is_never_removed(root, gone, marker):
    path = root / "request-odd"
    path.mkdir(mode=0o700)
    valid = {"package": "hostlink", "pid": gone, "created": 0}  # without the malformed field: removed
    (path / MARKER).write_text(json.dumps({**valid, **marker} if isinstance(marker, dict) else marker))
    assert (recover_stale(), path.exists()) == ((1, False) if marker == {} else (0, True))


def test_recovery_of_a_root_that_does_not_exist_removes_nothing(tmp_path):
    assert recover_stale(tmp_path / "never-made") == 0
