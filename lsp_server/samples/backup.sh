#!/usr/bin/env bash
# Copy a directory to a dated backup folder.
set -euo pipefail

log_info() {
  local message="$1"
  echo "info: ${message}" >&2
}

log_warn() {
  local message="$1"
  echo "warn: ${message}" >&2
}

backup() {
  local source="$1"
  local target="$2/$(date +%F)"
  if [ ! -d "$source" ]; then
    log_warn "no such directory: $source"
    return 1
  fi
  mkdir -p "$target"
  for file in "$source"/*; do
    cp -r "$file" "$target"
  done
  log_info "copied $source to $target"
}

backup "${1:-.}" "${2:-/tmp/backups}"
