"""The pack lock on Windows (msvcrt byte locks), for real under Wine: a second process
waits, naming the holder's pid, and gets the lock once the first lets go."""

from __future__ import annotations

from pathlib import Path

WAITER = '''
import subprocess, sys, time
from pathlib import Path
from bundler.support.exclusive import exclusive

lock = Path(sys.argv[1]) / ".app.pack-lock"
if len(sys.argv) > 2:  # the second process
    said = []
    with exclusive(lock, "app", said.append):
        print("second got it;", said[0] if said else "without waiting", flush=True)
    sys.exit(0)
import os
with exclusive(lock, "app", print):
    print("first holds it as", os.getpid(), flush=True)
    second = subprocess.Popen([sys.executable, __file__, sys.argv[1], "second"],
                              stdout=subprocess.PIPE, text=True)
    time.sleep(3)
    print("second still waiting:", second.poll() is None, flush=True)
print(second.communicate(timeout=60)[0], flush=True)
'''


def test_a_second_process_waits_for_the_lock_on_windows(win_python, tmp_path: Path) -> None:
    script = tmp_path / "waiter.py"
    script.write_text(WAITER)
    result = win_python.run([script, tmp_path], check=True, timeout=120)
    lines = result.stdout.splitlines()
    pid = lines[0].split()[-1]
    assert "second still waiting: True" in lines
    assert f"second got it; bundler: waiting for another bundler (pid {pid})" in result.stdout
