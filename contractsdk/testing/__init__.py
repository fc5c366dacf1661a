"""What your own tests need to test code that uses contractsdk.

* :class:`MockTransport` runs the real client against a handler function.
* :func:`json_response` builds a response for a handler.
* :func:`signature_png` makes a small PNG to sign a contract with.
* The pytest plugin (loaded automatically) provides ``sandbox_server`` and
  ``sandbox_client`` fixtures backed by the embedded emulator.
"""

from contractsdk.testing._images import signature_png
from contractsdk.testing._mock import Handler, MockTransport, json_response

__all__ = ["Handler", "MockTransport", "json_response", "signature_png"]
