"""A new knob by data alone: a [knob.NAME] declaration in a temp config, and no code, is validated,
passed to the simulator's argv or env, verified from its log or /server_info, and shown in status;
a bad declaration stops `ddtune up` with the field and the fix, starting nothing."""

import json
from pathlib import Path

from tests.backends.lifecycle_support import write_config
from tests.helpers import run_cli, run_ddtune

DECLARED = """
[knob.log_every]
help = "decode steps between two decode log lines"
type = "int"
min = 1
max = 1000
unit = "steps"
flag = "--decode-log-interval"
verify = { log = "server_args=", field = "decode_log_interval", label = "the server_args dump" }

[knob.overlap]
help = "the overlap scheduler, by its env var"
type = "bool"
env = "SGLANG_ENABLE_SPEC_V2"
verify = { server_info = "disable_overlap_schedule", negate = true }
"""


def declared_config(tmp_path, text=DECLARED):
    cfg = write_config(tmp_path, knobs={"window": 2048, "log_every": 20})
    body = cfg.read_text()
    cfg.write_text(body.replace("[knobs]", text.strip() + "\n\n[knobs]"))
    return cfg


def status_json(cfg):
    out = run_cli("--config", str(cfg), "status", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_declared_knob_is_validated_passed_verified_and_shown(tmp_path, state_dir, groups):
    cfg = declared_config(tmp_path)
    out = run_cli("--config", str(cfg), "up", "--set", "log_every=5000")
    assert out.returncode == 2 and "--set: knob 'log_every': expected an integer from 1 to 1000" in out.stderr
    assert "hint: --set log_every=8 (an integer from 1 to 1000)" in out.stderr
    assert not (state_dir / "server.json").exists()  # nothing was started

    out = run_ddtune("--config", str(cfg), "up", "--set", "overlap=false", "--set", "draft_kv_ratio=0.5")
    groups.track_state()
    assert out.returncode == 0, out.stderr
    assert "log_every=20" in out.stderr and "overlap=False" in out.stderr  # the effective line of `up`
    doc = status_json(cfg)
    argv = doc["argv"]
    assert argv[argv.index("--decode-log-interval") + 1] == "20"
    assert argv[argv.index("--speculative-draft-kv-ratio") + 1] == "0.5"  # a shipped knob of an open PR
    environ = Path(f"/proc/{doc['pid']}/environ").read_bytes().split(b"\0")
    assert b"SGLANG_ENABLE_SPEC_V2=0" in environ
    assert doc["knobs"]["log_every"] == 20 and doc["knobs"]["overlap"] is False
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["log_every"] == {"name": "log_every", "requested": 20, "effective": 20,
                                   "source": "the server_args dump", "status": "verified"}
    assert checks["overlap"] == {"name": "overlap", "requested": False, "effective": False,
                                 "source": "/server_info", "status": "verified"}
    assert checks["draft_kv_ratio"]["status"] == "verified" and doc["mismatches"] == []
    assert doc["effective"]["log_every"] == 20

    out = run_cli("--config", str(cfg), "status")
    assert "log_every=20" in out.stdout and "overlap=false" in out.stdout
    assert "verified:   log_every: 20, as requested (the server_args dump)" in out.stdout
    assert "verified:   overlap: False, as requested (/server_info)" in out.stdout

    out = run_ddtune("--config", str(cfg), "restart", "--set", "log_every=7")  # the engine's path, --set
    groups.track_state()
    assert out.returncode == 0, out.stderr
    assert {c["name"]: c for c in status_json(cfg)["checks"]}["log_every"]["effective"] == 7
    assert run_ddtune("--config", str(cfg), "down").returncode == 0


def test_a_bad_declaration_stops_up_naming_the_field(tmp_path, state_dir):
    for decl, words in (('type = "integer"\nflag = "--x"\nverify = "unverifiable"', ("type: unknown type 'integer'",
                                                                                        "hint: use one of int")),
                        ('type = "int"\nverify = "unverifiable"', ("needs a flag or an env var",
                                                                   'hint: flag = "--my-flag"')),
                        ('type = "int"\nmin = 9\nmax = 2\nflag = "--x"\nverify = "unverifiable"',
                         ("min: the bounds are reversed", "swap them: min = 2, max = 9"))):
        cfg = declared_config(tmp_path, f"[knob.log_every]\n{decl}\n")
        out = run_cli("--config", str(cfg), "up")
        assert out.returncode == 2, out.stderr
        assert f"{cfg}: [knob.log_every]" in out.stderr
        for word in words:
            assert word in out.stderr, out.stderr
        assert not (state_dir / "server.json").exists()
