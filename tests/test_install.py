"""The tool as a lab installs it: from a wheel, away from the checkout, with its contracts and profiles."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import baccarat_audit

ROOT = Path(__file__).resolve().parent.parent


def test_an_installed_tool_carries_its_contracts_and_profiles(tmp_path):
    # Built from a copy, so that the build leaves nothing in the checkout.
    source = tmp_path / "source"
    for part in ("pipeline", "schemas"):
        shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, source / part)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site, source],
                   check=True, capture_output=True)
    shutil.rmtree(source)  # the installed tool must not lean on the files it was built from

    def tool(*args, python=("-m", "baccarat_audit")):
        return subprocess.run([sys.executable, *python, *map(str, args)], cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True)

    where = tool(python=("-c", "import baccarat_audit; print(baccarat_audit.__file__)"))
    assert Path(where.stdout.strip()).is_relative_to(site)
    # Under its own name only: a top-level `pipeline` would collide with anyone else's.
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info")) == ["baccarat_audit", "bin"]
    done = tool("audit", ROOT / "data" / "rounds.csv", "--bets", ROOT / "data" / "bets.csv",
                "--profile", "ez-baccarat", "--out", tmp_path / "out")
    assert done.returncode == 1, done.stderr  # the sample's seeded faults
    rules = json.loads((tmp_path / "out" / "summary.json").read_text())["rules"]
    assert "schemas/profiles/ez-baccarat.toml" in rules["profiles"]["ez-baccarat"]
    for name, digests in [*rules["profiles"].items(), ("contract", rules["contract"])]:
        assert digests == {path: hashlib.sha256((ROOT / path).read_bytes()).hexdigest() for path in digests}, name
    # The library under the same name: a notebook's call, on the installed code, finds what the checkout's does.
    called = tool(ROOT / "data" / "rounds.csv", python=("-c", "import sys, baccarat_audit; done = baccarat_audit."
                                                      "audit(sys.argv[1]); print(done.exit_code, done.findings.height)"))
    here = baccarat_audit.audit(ROOT / "data" / "rounds.csv")
    assert called.stdout.split() == ["1", str(here.findings.height)], called.stderr
    mapped = tool("audit", ROOT / "data" / "provider_b_rounds.csv", "--mapping", "provider-b", "--out", tmp_path / "b")
    assert mapped.returncode in (0, 1), mapped.stderr
    assert json.loads((tmp_path / "b" / "summary.json").read_text())["rounds_audited"] > 0
