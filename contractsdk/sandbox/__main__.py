"""Run the emulator: ``python -m contractsdk.sandbox --port 8080``."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
