"""The thin clients' launchers (overlay/cli/launchers.py): python -IS, the
package's folder named in the script, written over pip's by the install."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from commands_from_source import THIN
from daemon_harness import BIN
from overlay.cli import launchers
from overlay.language.limits import shown


def test_every_thin_client_and_nothing_else_gets_a_launcher():
    assert launchers.thin_clients().keys() == THIN.keys()


def test_the_install_put_a_launcher_in_place_of_each_thin_clients_script():
    """In bin, or beside the compiled client that stands in bin for them."""
    libexec = BIN.parent / "libexec" / "plus"
    folder = libexec if (libexec / "plus_client").exists() else BIN
    for command in THIN:
        first, second = (folder / command).read_text().splitlines()[:2]
        assert first.endswith(" -IS") and second.startswith(launchers.MARK), command
    assert launchers.MARK not in (BIN / "plus_scheduler").read_text()


def test_a_launcher_runs_its_command(tmp_path):
    scripts = tmp_path / "bin"
    scripts.mkdir()
    folder = str(Path(launchers.__file__).parents[2])
    written = launchers.write(str(scripts), str(BIN / "python"), folder)
    assert sorted(written) == sorted(THIN)
    result = subprocess.run([scripts / "plus_status", "-h"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("usage: plus_status")
    assert os.stat(scripts / "plus_status").st_mode & 0o777 == 0o755
    assert not list(scripts.glob("*.new"))


def test_a_users_pythonpath_cannot_shadow_the_commands_modules(tmp_path):
    shadow = tmp_path / "overlay"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise SystemExit('shadowed')\n")
    (tmp_path / "json.py").write_text("raise SystemExit('shadowed')\n")
    result = subprocess.run([BIN / "plus_status", "-h"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    assert result.returncode == 0 and "shadowed" not in result.stderr


def test_a_launched_command_exits_with_its_status_its_output_whole(tmp_path):
    scripts = tmp_path / "bin"
    scripts.mkdir()
    launchers.write(str(scripts), str(BIN / "python"), str(Path(launchers.__file__).parents[2]))
    helped = subprocess.run(f"{scripts}/plus_reserve -h | cat", shell=True, capture_output=True,
                            text=True)
    assert helped.returncode == 0 and helped.stdout.rstrip().endswith("(default /etc/plus/plus.yaml).")
    refused = subprocess.run([scripts / "plus_status", "-r", "x"], capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stderr.startswith("plus_status: -r: invalid")
    unreachable = subprocess.run([scripts / "plus_status"], capture_output=True, text=True,
                                 env={**os.environ, "PLUS_CONF": str(tmp_path / "none.yaml")})
    assert unreachable.returncode == 3 and shown(tmp_path / "none.yaml") in unreachable.stderr
