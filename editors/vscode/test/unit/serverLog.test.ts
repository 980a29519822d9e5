/** The server's stderr lines reach the output channel at their own level, without the server's timestamp. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { ServerLogReader } from "../../src/serverLog";

test("each record keeps its own level and loses the server's timestamp", () => {
  const reader = new ServerLogReader();
  assert.deepEqual(reader.read("2026-12-02 00:43:18,123 DEBUG lsp_server.completion.pipeline: miss"), {
    level: "debug",
    text: "lsp_server.completion.pipeline: miss",
  });
  assert.deepEqual(reader.read("2026-12-02 00:43:18,124 INFO lsp_server.server.language_server: started"), {
    level: "info",
    text: "lsp_server.server.language_server: started",
  });
  assert.equal(reader.read("2026-12-02 00:43:18,125 WARNING transport.pool: slow").level, "warn");
  assert.equal(reader.read("2026-12-02 00:43:18,126 ERROR lsp_server.completion.notify: down").level, "error");
  assert.equal(reader.read("2026-12-02 00:43:18,127 CRITICAL x: y").level, "error");
});

test("a line that continues a record keeps the record's level", () => {
  const reader = new ServerLogReader();
  reader.read("2026-12-02 00:43:18,123 WARNING lsp_server.settings: two problems:");
  assert.deepEqual(reader.read("  cache.capacity must be >= 1"), {
    level: "warn",
    text: "  cache.capacity must be >= 1",
  });
});

test("a traceback or an argparse error is an error", () => {
  const reader = new ServerLogReader();
  assert.equal(reader.read("usage: scopecache serve [-h] [--tcp HOST:PORT]").level, "info");
  assert.equal(reader.read("scopecache serve: error: unrecognized arguments: --bogus").level, "error");
  const after = new ServerLogReader();
  after.read("2026-12-02 00:43:18,123 INFO lsp_server.server.language_server: started");
  assert.equal(after.read("Traceback (most recent call last):").level, "error");
  assert.equal(after.read('  File "x.py", line 1, in <module>').level, "error");
});
