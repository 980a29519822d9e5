"""Real-world source files for tests and benchmarks: pinned, fetched once, kept outside the clone.

Ordinary source files of published packages, a few per core language,
fetched from the package registries with their ordinary clients: PyPI
sdists (over PyPI's JSON API), npm tarballs (``npm pack``) and Debian
packages (``apt-get download``). Nothing third-party is kept in the
repository: the files are extracted into
``${SCOPECACHE_TOOLS_DIR:-~/.cache/scopecache/tools}/real-world-sources-<N>``
once and reused. Each file's SHA-256 is pinned in ``SOURCES``; a mismatch is
reported and that file is skipped.

Used by ``tests.bench.bench_real_world`` (the languages acceptance bar on
these files), ``tests.bench.bench_scope_probe`` and the scope probe's test
(``tests/unit/completion/test_scope_probe.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lsp_server.documents.languages import default_registry

#: bump when ``SOURCES`` changes, so a cache of other files is never reused
SOURCES_VERSION = 2


@dataclass(frozen=True)
class Source:
    """One real-world file: where it is published and what it must hash to."""

    language: str
    #: ``pypi`` (an sdist), ``npm`` (a package tarball) or ``deb`` (a Debian package)
    registry: str
    package: str
    version: str
    #: path inside the archive, below its top folder (sdist, npm's ``package/``)
    path: str
    sha256: str

    @property
    def label(self) -> str:
        """``package-version:path``, the provenance shown in the table."""
        return f"{self.package}-{self.version}:{self.path}"

    @property
    def cached_name(self) -> str:
        """The file's place in the cache folder."""
        return f"{self.language}/{self.package}-{self.version}/{self.path}"


GO_SRC = "usr/share/go-1.19/src"
RUST_SRC = "usr/src/rustc-1.63.0/library"
SOURCES: tuple[Source, ...] = (
    Source("python", "pypi", "requests", "2.32.3",
           "src/requests/sessions.py",
           "ca44c8f145864a5b4e7c7d3b1caa25947ee44c11b0e168620556901a67244f0e"),
    Source("python", "pypi", "click", "8.1.7",
           "src/click/parser.py",
           "2cac98404f592e3e4a8080d792b7131d045722081fa22bd7d78fd45489f9e980"),
    Source("python", "pypi", "httpx", "0.27.2",
           "httpx/_client.py",
           "c4abf7e3485c2df38f0a78a57b1121da0360e41ac442a212eff3b4641f67c56c"),
    Source("javascript", "npm", "express", "4.22.3",
           "lib/router/index.js",
           "19c5ca9b025396612dbe464d07fbe7104ff9170c4d6a1c7e5507df4dbbf4d5cb"),
    Source("javascript", "npm", "express", "4.22.3",
           "lib/application.js",
           "5901b32f609ba349351bf7406dbdc0c4c57b77ce6f7215ea67ccca5ac2a28e88"),
    Source("javascript", "npm", "ws", "8.23.0",
           "lib/receiver.js",
           "77f7463d96be072b07183cdd8022d80e5032d3257948138ecd669dc758b20efa"),
    Source("typescript", "npm", "rxjs", "7.8.2",
           "src/internal/Observable.ts",
           "b53cad85cf6daf781230b0b5aec3cc96164b80300ae5f249791381ed747a7c0a"),
    Source("typescript", "npm", "rxjs", "7.8.2",
           "src/internal/ajax/ajax.ts",
           "81fde48e07be6fad5961d1d916a952b6ff0ea973cae0fc62ae038d57a8a8f861"),
    Source("typescript", "npm", "zod", "3.25.76",
           "src/v4/core/util.ts",
           "37260075a60848e723198288f17462435ae1bf0268278f992de19ddab8538479"),
    Source("go", "deb", "golang-1.19-src", "1.19.8-2",
           f"{GO_SRC}/bufio/bufio.go",
           "d0085f57538f7e36f9212749e2c0ec25d781aeeb8c82831954089ed030f94f74"),
    Source("go", "deb", "golang-1.19-src", "1.19.8-2",
           f"{GO_SRC}/encoding/csv/reader.go",
           "59dc102209d2fce7cac2ed2225f081cf45f84f9cbf727aa9112af2804f928e56"),
    Source("go", "deb", "golang-1.19-src", "1.19.8-2",
           f"{GO_SRC}/net/http/cookie.go",
           "00abf99beeb9b5a7a3634604d86c57442f269e6abf051a441ac164ee1595d7b1"),
    Source("rust", "pypi", "pydantic_core", "2.50.5",
           "src/lookup_key.rs",
           "a0adb470f50d4452df7442b800f131180ec8a5905b0f53c6e020a0b5fc971a13"),
    Source("rust", "pypi", "pydantic_core", "2.50.5",
           "src/validators/union.rs",
           "c1d53a6ba5750315b2be8781ab672f2ae6f1d46decdf09efddf1a3f3de56effe"),
    Source("rust", "pypi", "orjson", "3.13.0",
           "include/cargo/associative-cache-3.0.1/src/replacement/lru.rs",
           "ee671126d92545a3a89ce01545e3aafb59fae94d684f25cab85f3972db1c751c"),
    Source("rust", "deb", "rust-src", "1.63.0+dfsg1-2",
           f"{RUST_SRC}/core/src/option.rs",
           "29071d42895bca921d711d975f923cc605495ab3173e7248754b1f14d9a70343"),
    Source("java", "pypi", "JPype1", "1.7.1",
           "native/jpype_module/src/main/java/org/jpype/JPypeContext.java",
           "17c9220d60ed977cba4b72380d9d3723635a4acbfdee45358f236187a74b20f3"),
    Source("java", "pypi", "JPype1", "1.7.1",
           "native/jpype_module/src/main/java/org/jpype/manager/TypeManager.java",
           "8a47d5d2baea78df6cff92f09b2d20f1cb3db5265f5f6c6ce4fcd66bb7695d4e"),
    Source("java", "pypi", "JPype1", "1.7.1",
           "native/jpype_module/src/main/java/org/jpype/html/Parser.java",
           "d36f642c8e5b5025f3e09101f01d2a5c8ac3890a91924af0259a61727fa671a2"),
    Source("c", "pypi", "ujson", "6.1.0",
           "src/ujson/decode.c",
           "c23c6c5a15666a6df182b0b827c9fedd676321027a45599af4f671272b464212"),
    Source("c", "pypi", "psutil", "7.2.2",
           "psutil/arch/linux/proc.c",
           "4b0043764bccc1847d43233e301142d47d12ced59f7fed59130d2b6170cd2589"),
    Source("c", "pypi", "msgpack", "1.2.4",
           "msgpack/unpack_template.h",
           "2d60ba195016e8959cf479e6415348ab2ed3cc15ac13ef98cf24c3a98138653c"),
    Source("cpp", "pypi", "greenlet", "3.5.6",
           "src/greenlet/TGreenlet.cpp",
           "3018023703f4c914c56ca84e14025d04eb7e2006f0d15b58e2b5315d4df2a3b3"),
    Source("cpp", "pypi", "kiwisolver", "1.5.1",
           "py/src/solver.cpp",
           "e7b4359d07d114e63139993ad6628221a9e432a910c0deb774b4bf9fecb8dcd9"),
    Source("cpp", "pypi", "JPype1", "1.7.1",
           "native/common/jp_context.cpp",
           "4fb4e21df2b0e1b5988edf3c32287c39cc37ba918893457e6a860849c54d3d85"),
)


class FetchError(Exception):
    """A source could not be fetched or does not hash to its pinned digest."""


def tools_dir() -> Path:
    """Where heavy downloads are cached, outside the clone."""
    if env := os.environ.get("SCOPECACHE_TOOLS_DIR"):
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "scopecache" / "tools"


def cache_dir() -> Path:
    """This version's folder of extracted files."""
    return tools_dir() / f"real-world-sources-{SOURCES_VERSION}"


def _pypi_sdist(package: str, version: str, into: Path) -> Path:
    api = f"https://pypi.org/pypi/{package}/json"
    with urllib.request.urlopen(api, timeout=60) as resp:
        meta = json.load(resp)
    sdists = [u for u in meta["releases"].get(version, []) if u["packagetype"] == "sdist"]
    if not sdists:
        raise FetchError(f"{package} {version} has no sdist on PyPI")
    target = into / str(sdists[0]["filename"])
    url = urllib.parse.urljoin(api, sdists[0]["url"])
    with urllib.request.urlopen(url, timeout=300) as resp, target.open("wb") as out:
        shutil.copyfileobj(resp, out)
    return target


def _npm_tarball(package: str, version: str, into: Path) -> Path:
    out = subprocess.run(
        ["npm", "pack", f"{package}@{version}", "--pack-destination", str(into), "--silent"],
        check=True, capture_output=True, text=True, timeout=300,
    )
    return into / out.stdout.strip().splitlines()[-1]


def _deb_data(package: str, version: str, into: Path) -> Path:
    download = ["apt-get", "download", f"{package}={version}"]
    try:
        subprocess.run(download, cwd=into, check=True, capture_output=True, timeout=600)
    except subprocess.CalledProcessError:
        # a fresh machine has no package lists yet
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True, timeout=600)
        subprocess.run(download, cwd=into, check=True, capture_output=True, timeout=600)
    deb = next(into.glob(f"{package}_*.deb"))
    data = into / f"{package}.tar"
    with data.open("wb") as out:
        subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=out, check=True)
    return data


def _member(archive: Path, path: str, registry: str) -> bytes:
    with tarfile.open(archive) as tar:
        for info in tar:
            name = info.name.removeprefix("./")
            inner = name if registry == "deb" else name.partition("/")[2]
            if inner == path and info.isfile():
                extracted = tar.extractfile(info)
                assert extracted is not None
                return extracted.read()
    raise FetchError(f"{path} is not in {archive.name}")


def _fetch_archive(source: Source, into: Path) -> Path:
    print(f"fetching {source.registry} {source.package} {source.version}",
          file=sys.stderr, flush=True)
    if source.registry == "pypi":
        return _pypi_sdist(source.package, source.version, into)
    if source.registry == "npm":
        return _npm_tarball(source.package, source.version, into)
    return _deb_data(source.package, source.version, into)


def fetch(sources: Sequence[Source], root: Path) -> tuple[list[tuple[Source, Path]], list[str]]:
    """Every source extracted under ``root`` (fetched once); the files and the problems."""
    files: list[tuple[Source, Path]] = []
    problems: list[str] = []
    missing = [s for s in sources if not (root / s.cached_name).is_file()]
    archives: dict[tuple[str, str, str], Path] = {}
    failed: dict[tuple[str, str, str], str] = {}
    with tempfile.TemporaryDirectory(prefix="real-world-") as tmp:
        for source in missing:
            key = (source.registry, source.package, source.version)
            if key in failed:
                problems.append(f"{source.label}: not fetched ({failed[key]})")
                continue
            try:
                if key not in archives:
                    try:
                        archives[key] = _fetch_archive(source, Path(tmp))
                    except (OSError, subprocess.SubprocessError, FetchError, KeyError) as exc:
                        failed[key] = str(exc)
                        raise
                data = _member(archives[key], source.path, source.registry)
            except (OSError, subprocess.SubprocessError, FetchError, KeyError) as exc:
                problems.append(f"{source.label}: not fetched ({exc})")
                continue
            target = root / source.cached_name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    for source in sources:
        target = root / source.cached_name
        if not target.is_file():
            continue
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
        if source.sha256 and digest != source.sha256:
            problems.append(f"{source.label}: sha256 {digest}, expected {source.sha256}")
            continue
        files.append((source, target))
    return files, problems


def sources_under(directory: Path) -> list[tuple[str, str, Path]]:
    """Every source file under ``directory`` a language knows: (language, relative path, path)."""
    registry = default_registry()
    found = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        spec = registry.for_uri(path.name)
        if spec is not None:
            found.append((spec.name, str(path.relative_to(directory)), path))
    return found
