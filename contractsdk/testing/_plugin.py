"""The contractsdk pytest plugin (registered through the ``pytest11`` entry point).

Its fixtures arrive with the sandbox emulator; until then it registers nothing.
"""
