"""``python -m contractsdk.cli``: the same as the ``contractsdk`` command."""

from contractsdk.cli import main

raise SystemExit(main())
