"""Developer tasks: `nox -s tests lint typecheck docs bench`."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.default_venv_backend = "venv"
nox.options.error_on_external_run = True


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Lint and check formatting with ruff."""
    session.install("-e", ".[lint]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """Type-check the package, tests and benchmarks with mypy --strict."""
    session.install("-e", ".[test,lint]")
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the docs site (warnings are errors)."""
    session.install("-e", ".[docs]")
    session.run("sphinx-build", "-W", "--keep-going", "-b", "html", "docs", "docs/_build/html")


@nox.session
def bench(session: nox.Session) -> None:
    """Run the benchmarks, print their tables and draw their charts into docs/images/.

    `nox -s bench -- learning --quick` picks one; a `--chart DIR` of your own wins.
    """
    session.install("-e", ".[test]", "aiolimiter>=1.1", "matplotlib>=3.8")
    session.run("python", "-m", "benchmarks", "--chart", "docs/images", *session.posargs)
