"""examples/typed/coffee.py runs and shows each way of Table 2-2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_coffee_example() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "typed" / "coffee.py")],
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "typed channel 0; interfaces: IDL:CoffeeShop/Coffee:1.0"
    assert lines[1:4] == ["barista: Jane is drinking coffee for 5 minutes",
                          "barista: Jo cancelled",
                          "barista: Al is drinking coffee for 2 minutes"]
    assert lines[4] == ("structured consumer ($minutes > 3): %TYPED "
                        "operation='::CoffeeShop::Coffee::drinking_coffee', name='Jane', "
                        "minutes=5")
    assert lines[5:] == ["typed pull consumer: try_cancel_coffee() -> (True, 'Jo')",
                         "typed pull consumer: drinking_coffee() -> ('Jane', 5)",
                         "typed pull consumer: try_drinking_coffee() -> (True, 'Al', 2)",
                         "typed pull consumer: try_drinking_coffee() -> (False, '', 0)"]
