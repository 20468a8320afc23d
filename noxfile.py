"""The test legs as named sessions: ``nox -s unit``, ``gateway``, ``hosts``, ``pure``, ``lint``; ``nox`` runs them all.

Each session builds the package in an environment of its own. The legs are folders of ``tests/``: ``unit``
(the library: scanners, dialects, options, the differential and conformance suites), ``gateway`` (the proxy
and the API streams end to end, through the openai and anthropic SDKs and agent frameworks) and ``hosts``
(vLLM, SGLang and LiteLLM, through their own installed code). ``.ci/run`` runs the same commands in one
environment (the README's two commands first)."""

import nox

nox.options.sessions = ["unit", "gateway", "hosts", "pure", "lint"]
HOSTS = ("-r", "tests/hosts/requirements.txt")


@nox.session
def unit(session: nox.Session) -> None:
    session.install(".[test]")
    session.run("python", "-m", "pytest", "tests/unit", *session.posargs)


@nox.session
def gateway(session: nox.Session) -> None:
    session.install(".[test]")
    session.run("python", "-m", "pytest", "tests/gateway", *session.posargs)


@nox.session
def hosts(session: nox.Session) -> None:
    session.install(".[test]", *HOSTS)
    session.install("--no-deps", "-r", "tests/hosts/no-deps.txt")
    session.run("python", "-m", "pytest", "tests/hosts", *session.posargs)


@nox.session
def pure(session: nox.Session) -> None:
    """The pure-Python install (no compiler): the twin alone, every leg but the hosts."""
    session.env["TEXTCALLS_NO_EXTENSIONS"] = "1"
    session.install(".[test]")
    session.run("python", "-c", "import sys, textcalls; sys.exit(textcalls.IMPLEMENTATION != 'python')")
    session.run("python", "-m", "pytest", "-m", "not slow", "tests/unit", "tests/gateway", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install(".[lint]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("cython-lint", "ext")
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """The docs site, warnings as errors (as .ci/run builds it)."""
    session.install(".[docs]")
    site = str(session.create_tmp())
    session.run("mkdocs", "build", "--strict", "--site-dir", site, env={"NO_MKDOCS_2_WARNING": "1"})
