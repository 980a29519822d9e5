"""An install without the ``tls`` extra, as ``pipx install scopecache`` and the .vsix make one.

trustme (and the cryptography under it) is the ``tls`` extra. Each command
runs in a fresh interpreter where importing trustme fails as it does when
the package is not installed (``sys.modules["trustme"] = None``); nothing
else of the environment changes. Plain HTTP use of the reference service
works there; whatever needs its self-signed TLS stops at once with a message
that names the command installing the extra.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from lsp_server.kit.synth.session import synthesize
from lsp_server.kit.upstream_process import read_port_file
from lsp_server.observe.trace.writer import write_trace
from tests.support.conditions import until
from tests.support.greet import TEXT, URI
from tests.support.process import end_process

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "corpus"
INSTALL = "pip install 'scopecache[tls]'"
#: ``scopecache ARGS...`` in an interpreter where trustme cannot be imported
WITHOUT_TLS_EXTRA = (
    "import sys; sys.modules['trustme'] = None; "
    "from lsp_server.cli import main; sys.exit(main(sys.argv[1:]))"
)


def scopecache(*args: str | Path) -> list[str]:
    return [sys.executable, "-c", WITHOUT_TLS_EXTRA, *(str(a) for a in args)]


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        scopecache(*args), capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )


def test_the_interpreter_really_lacks_trustme() -> None:
    probe = [sys.executable, "-c", WITHOUT_TLS_EXTRA.split("from")[0] + "import trustme"]
    result = subprocess.run(probe, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode != 0 and "ModuleNotFoundError" in result.stderr


def test_upstream_with_tls_names_the_extra_and_does_not_listen(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    result = run(
        "upstream", "--port", "0", "--port-file", port_file,
        "--tls-self-signed", tmp_path / "tls",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert INSTALL in result.stderr and "Traceback" not in result.stderr
    assert read_port_file(port_file) is None
    assert not (tmp_path / "tls" / "ca.pem").exists()


@pytest.fixture
async def plain_upstream(tmp_path: Path) -> AsyncIterator[int]:
    """``scopecache upstream`` over cleartext HTTP without the extra; yields its port."""
    port_file = tmp_path / "port"
    process = subprocess.Popen(
        scopecache("upstream", "--port", "0", "--port-file", port_file, "--corpus", CORPUS),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        async def listening() -> bool:
            assert process.poll() is None, process.communicate()[1].decode()
            return read_port_file(port_file) is not None

        await until(listening, "the service to write its port")
        port = read_port_file(port_file)
        assert port is not None
        yield port
    finally:
        end_process(process)


async def test_upstream_over_plain_http_completes_without_the_extra(plain_upstream: int) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{plain_upstream}") as client:
        health = await client.get("/health")
        answer = await client.post(
            "/v1/completions", json={"prompt": "class Circle:\n    def __init__(self"}
        )
    assert health.status_code == 200
    assert answer.status_code == 200 and answer.json()["choices"][0]["text"]


def test_demo_names_the_extra_instead_of_failing_later() -> None:
    result = run("demo", "--json")
    assert result.returncode == 2, result.stderr
    assert INSTALL in " ".join(result.stderr.split()) and "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "command",
    [("replay",), ("prewarm", "--reference-service", "--from")],
    ids=["replay", "prewarm"],
)
def test_commands_that_start_a_reference_service_name_the_extra(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    trace = tmp_path / "session.jsonl"
    write_trace(trace, synthesize({URI: TEXT}, seed=1))
    result = run(*command, trace, "--json")
    assert result.returncode == 2, result.stderr
    assert INSTALL in " ".join(result.stderr.split()) and "Traceback" not in result.stderr
