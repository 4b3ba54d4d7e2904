"""Root's writes never follow another user's links nor land in a folder another user rules (issue 28,
item 1), through the real CLI as root, as the red team ran it.

The attack: a folder made 0777 by another user, holding ``slots.jsonl`` and ``.sweep.json.N.tmp``
linked to root's files; root's ``ddtune sweep --out DIR`` truncated one and appended to the other,
and ``eval --out F`` wrote through ``F.tmp``. Each victim here must stay byte-identical, each
refusal is one line naming the folder or file and the fix (exit 2), and nothing runs first."""

from __future__ import annotations

import json
import os
import socket
import stat

import pytest

from tests.backends.lifecycle_support import write_config
from tests.backends.state_support import leaders
from tests.helpers import free_port, run_ddtune

SPARE = 65534  # another user (nobody): the tests run as root, as CI does
VICTIM = b"root:x:0:0:root:/root:/bin/bash\n"
SMALL = ("--contexts", "60", "--concurrency", "1", "--requests-per-cell", "2", "--max-tokens", "32",
         "--warmup", "0", "--no-eval")
NO_CODE = {"problem": "fib", "content": "no code here", "reasoning_content": None, "finish_reason": "stop"}


def error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    (line,) = [x for x in stderr.splitlines() if x.startswith("ddtune: error:")]
    return line


def victim(tmp_path, name: str = "victim"):
    path = tmp_path / name
    path.write_bytes(VICTIM)
    return path


def plant(folder, name: str, target, uid: int = SPARE) -> None:
    (folder / name).symlink_to(target)
    os.lchown(folder / name, uid, uid)


def listing(folder) -> dict[str, tuple[int, int, str]]:
    """name -> (mode, owner, link target or '') of each entry: what a refused command must leave as is."""
    out = {}
    for entry in os.scandir(folder):
        st = entry.stat(follow_symlinks=False)
        out[entry.name] = (st.st_mode, st.st_uid, os.readlink(entry.path) if entry.is_symlink() else "")
    return out


@pytest.fixture
def trap(tmp_path):
    """The red team's folder: made by another user, 0777, links to root's files in it for the names a
    sweep and a search write (the temp names for a range of pids, as the attacker cannot know it)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    victims = [victim(tmp_path, "victim-append"), victim(tmp_path, "victim-truncate")]
    for name in ("slots.jsonl", "rounds.jsonl", "responses.jsonl"):
        plant(folder, name, victims[0])
    for manifest in ("sweep.json", "search.json"):
        plant(folder, f"{manifest}.tmp", victims[1])
        for pid in range(os.getpid(), os.getpid() + 200):
            plant(folder, f".{manifest}.{pid}.tmp", victims[1])
    os.chown(folder, SPARE, SPARE)
    folder.chmod(0o777)
    return folder, victims


def ruled(tmp_path, how: str):
    """A folder another user rules, each way the rule names: its owner, or its write bits."""
    parent = tmp_path / "parent"
    parent.mkdir()
    folder = parent / "out"
    folder.mkdir()
    if how == "owned-by-another":
        os.chown(folder, SPARE, SPARE)
        folder.chmod(0o755)
        return folder, folder
    if how == "group-writable":
        folder.chmod(0o775)
        return folder, folder
    if how == "parent-of-another":  # our own folder, inside one another user can rename it out of
        os.chown(parent, SPARE, SPARE)
        parent.chmod(0o755)
        return folder, parent
    raise AssertionError(how)


@pytest.mark.parametrize("command", [("sweep", "b8-t4-w2048", *SMALL),
                                     ("search", "--space", "budget=4,8", "--target-context", "60", "--max-tokens",
                                      "32", "--warmup", "0")])
def test_a_sweep_or_search_into_the_red_teams_folder_is_refused_before_anything_runs(
        tmp_path, state_dir, no_leftovers, trap, command):
    folder, victims = trap
    before = listing(folder)
    cfg = write_config(tmp_path, port=free_port())
    out = run_ddtune("--config", str(cfg), *command, "--out", str(folder), timeout=180)
    assert out.returncode == 2, out.stderr[-2000:]
    line = error_line(out.stderr)
    assert f"folder {folder} is owned by uid {SPARE}" in line and "ddtune writes nothing under it" in line, line
    assert "hint: write to a folder of your own" in out.stderr
    assert all(v.read_bytes() == VICTIM for v in victims)
    assert listing(folder) == before      # no file made, no link replaced
    assert leaders(state_dir) == []       # no server started for it
    assert "restarting" not in out.stderr


@pytest.mark.parametrize("how", ["owned-by-another", "group-writable", "parent-of-another"])
def test_a_sweep_out_folder_another_user_rules_is_refused(tmp_path, state_dir, no_leftovers, how):
    folder, named = ruled(tmp_path, how)
    cfg = write_config(tmp_path, port=free_port())
    out = run_ddtune("--config", str(cfg), "sweep", "b8-t4-w2048", *SMALL, "--out", str(folder / "new"), timeout=180)
    assert out.returncode == 2, out.stderr[-2000:]
    line = error_line(out.stderr)
    assert f"folder {named} " in line, line
    fix = "chmod go-w" if how == "group-writable" else "write to a folder of your own"
    assert fix in out.stderr
    assert list(folder.iterdir()) == [] and leaders(state_dir) == []


def test_a_sweep_in_a_sticky_shared_folder_runs(tmp_path, state_dir, no_leftovers):
    """/tmp-like (root's, 1777): others may add names but not replace ours, so ddtune writes there."""
    shared = tmp_path / "tmp-like"
    shared.mkdir()
    shared.chmod(0o1777)
    cfg = write_config(tmp_path, port=free_port())
    out = run_ddtune("--config", str(cfg), "sweep", "b8-t4-w2048", *SMALL, "--out", str(shared / "mine"), timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    slots = shared / "mine" / "slots.jsonl"
    assert json.loads(slots.read_text().splitlines()[0])["status"] == "done"
    assert slots.stat().st_uid == 0 and not slots.is_symlink()
    assert [p.name for p in (shared / "mine").iterdir() if p.name.endswith(".tmp")] == []


def regrade_file(tmp_path):
    path = tmp_path / "responses.jsonl"
    path.write_text(json.dumps(NO_CODE) + "\n")
    return path


def out_command(kind: str, tmp_path, target) -> list[str]:
    """A command that writes ``--out target``; none needs a server up to reach its write."""
    if kind == "eval":
        return ["eval", "--regrade", str(regrade_file(tmp_path)), "--out", str(target)]
    if kind == "report":
        run = tmp_path / "20261130T090000Z-load"
        run.mkdir(exist_ok=True)
        (run / "run.json").write_text(json.dumps({"id": run.name, "kind": "load", "status": "done", "summary": {
            "output_tok_s": 10.0, "elapsed_s": 1.0, "finished": 1, "errors": 0}}))
        (run / "responses.jsonl").write_text("")
        return ["report", str(run), "--out", str(target)]
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["eval", "report"])
def test_a_linked_temp_name_beside_the_out_file_is_never_written_through(tmp_path, state_dir, kind):
    """``F.tmp`` (and the names a guesser would try) linked to a victim: F is written, the links are
    left as they are, the victim untouched."""
    folder = tmp_path / "results"
    folder.mkdir()
    target = folder / "out.json"
    hit = victim(tmp_path)
    for name in ("out.json.tmp", ".out.json.tmp", *(f".out.json.{pid}.tmp" for pid in range(os.getpid(),
                                                                                          os.getpid() + 200))):
        plant(folder, name, hit, uid=0)
    out = run_ddtune(*out_command(kind, tmp_path, target), timeout=120)
    assert out.returncode == 0, out.stderr
    assert hit.read_bytes() == VICTIM
    assert target.is_file() and not target.is_symlink() and target.read_text()
    assert (folder / "out.json.tmp").is_symlink()
    assert {p.name for p in folder.iterdir()} == {"out.json", "out.json.tmp", ".out.json.tmp",
                                                   *(f".out.json.{pid}.tmp" for pid in range(os.getpid(),
                                                                                             os.getpid() + 200))}


def make_target(tmp_path, what: str, hit):
    folder = tmp_path / "results"
    folder.mkdir()
    target = folder / "out.json"
    if what == "symlink":
        target.symlink_to(hit)
    elif what == "fifo":
        os.mkfifo(target)
    elif what == "folder":
        target.mkdir()
    return target


@pytest.mark.parametrize("what", ["symlink", "fifo", "folder"])
@pytest.mark.parametrize("kind", ["eval", "report", "bench", "check-lossless"])
def test_an_out_target_that_is_not_a_regular_file_is_refused_before_the_work(tmp_path, state_dir, kind, what):
    hit = victim(tmp_path)
    target = make_target(tmp_path, what, hit)
    if kind == "bench":  # nothing listens there: only a refusal before any request exits 2
        argv = ["bench", "--url", f"http://127.0.0.1:{free_port()}", "--contexts", "60", "--out", str(target)]
    elif kind == "check-lossless":
        argv = ["check-lossless", "--url", f"http://127.0.0.1:{free_port()}", "--save-baseline", str(target)]
    else:
        argv = out_command(kind, tmp_path, target)
    out = run_ddtune(*argv, timeout=60)  # a FIFO opened for writing would block: never opened
    assert out.returncode == 2, out.stderr
    line = error_line(out.stderr)
    said = {"symlink": "is a symbolic link", "fifo": "is a FIFO", "folder": "is a directory"}[what]
    assert f"{target} {said}" in line, line
    assert hit.read_bytes() == VICTIM
    mode = os.lstat(target).st_mode
    assert {"symlink": stat.S_ISLNK, "fifo": stat.S_ISFIFO, "folder": stat.S_ISDIR}[what](mode)
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]


@pytest.mark.parametrize("kind", ["eval", "report"])
def test_an_out_file_in_a_group_writable_folder_is_refused(tmp_path, state_dir, kind):
    folder = tmp_path / "team"
    folder.mkdir()
    folder.chmod(0o770)
    out = run_ddtune(*out_command(kind, tmp_path, folder / "out.json"), timeout=120)
    assert out.returncode == 2, out.stderr
    line = error_line(out.stderr)
    assert f"folder {folder} is writable by group or others without the sticky bit (mode 0770)" in line, line
    assert f"hint: chmod go-w {folder}" in out.stderr
    assert list(folder.iterdir()) == []


def test_in_a_sticky_folder_our_file_is_written_and_another_users_is_not_replaced(tmp_path, state_dir):
    shared = tmp_path / "tmp-like"
    shared.mkdir()
    shared.chmod(0o1777)
    out = run_ddtune(*out_command("eval", tmp_path, shared / "ours.json"), timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads((shared / "ours.json").read_text())["summary"]
    theirs = shared / "theirs.json"
    theirs.write_bytes(VICTIM)
    os.chown(theirs, SPARE, SPARE)
    out = run_ddtune(*out_command("eval", tmp_path, theirs), timeout=120)
    assert out.returncode == 2, out.stderr
    assert f"output file {theirs} is owned by uid {SPARE}" in error_line(out.stderr)
    assert theirs.read_bytes() == VICTIM and theirs.stat().st_uid == SPARE


def test_a_link_another_user_made_on_the_way_is_not_followed(tmp_path, state_dir):
    """``--out /tmp/x/out.json`` where x is another user's link to a folder of root's: not followed."""
    shared = tmp_path / "tmp-like"
    shared.mkdir()
    shared.chmod(0o1777)
    roots = tmp_path / "roots-own"
    roots.mkdir()
    plant(shared, "x", roots)
    out = run_ddtune(*out_command("report", tmp_path, shared / "x" / "out.md"), timeout=60)
    assert out.returncode == 2, out.stderr
    assert f"{shared / 'x'} is a symbolic link owned by uid {SPARE}" in error_line(out.stderr)
    assert list(roots.iterdir()) == []
    mine = tmp_path / "mine"
    mine.symlink_to(roots)  # root's own link is followed
    out = run_ddtune(*out_command("report", tmp_path, mine / "out.md"), timeout=60)
    assert out.returncode == 0, out.stderr
    assert (roots / "out.md").is_file()


@pytest.mark.parametrize("kind", ["eval", "bench"])
def test_a_resumed_run_never_cuts_a_file_its_jsonl_links_to(tmp_path, state_dir, start_sim, kind):
    """``--resume RUN_DIR`` repairs a torn last line before it appends: through a planted link that
    would cut root's file short. The JSONL is refused instead (exit 2), the victim left whole."""
    sim = start_sim()
    hit = tmp_path / "victim"
    torn = VICTIM + b"daemon:x:1:1:daemon"  # no newline at its end: the repair would cut this line off
    hit.write_bytes(torn)
    run = tmp_path / f"20261130T090000Z-{kind}"
    run.mkdir(mode=0o700)
    plan = ({"contexts": [60], "concurrencies": [1], "max_tokens": 16, "coding": False, "requests_per_cell": 2,
             "warmup": 0} if kind == "bench" else {"problems": ["fib"], "max_tokens": 16, "concurrency": 1})
    dead = {"id": 1, "pid": 1 << 30, "create_time": 1.0, "host": socket.gethostname(), "started_at": 1.0}
    (run / "run.json").write_text(json.dumps({"schema": "ddtune.run/1", "kind": kind, "id": run.name,
                                              "status": "interrupted", "plan": plan, "attempts": [dead]}))
    (run / "responses.jsonl").symlink_to(hit)
    out = run_ddtune(kind, "--url", sim.url, "--resume", str(run), timeout=120)
    assert out.returncode == 2, out.stderr
    assert f"{run / 'responses.jsonl'} is a symbolic link" in error_line(out.stderr)
    assert hit.read_bytes() == torn


def test_a_resume_in_a_folder_another_user_rules_is_refused_before_the_server_is_asked(tmp_path, state_dir):
    run = tmp_path / "20261130T090000Z-eval"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"kind": "eval", "status": "interrupted"}))
    os.chown(run, SPARE, SPARE)
    out = run_ddtune("eval", "--url", f"http://127.0.0.1:{free_port()}", "--resume", str(run), timeout=60)
    assert out.returncode == 2, out.stderr
    assert f"folder {run} is owned by uid {SPARE}" in error_line(out.stderr)
    assert sorted(p.name for p in run.iterdir()) == ["run.json"]
