/** Settings: package.json mirrors the generated schema, and the mapping sends exactly the server's keys. */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import {
  SERVER_SETTINGS,
  buildServerSettings,
  needsRestart,
  readerFromObject,
  configuredCommand,
  serverCommand,
  serverOptions,
} from "../../src/settings";

const root = join(__dirname, "..", "..", "..");
const schema = JSON.parse(readFileSync(join(root, "settings-schema.json"), "utf8"));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

test("package.json contributes every schema setting with the same type, default and description", () => {
  const contributed = pkg.contributes.configuration.properties;
  for (const [key, prop] of Object.entries(schema.properties)) {
    assert.deepEqual(contributed[key], prop, key);
  }
});

test("package.json adds only the extension's own scopecache.server keys", () => {
  const extra = Object.keys(pkg.contributes.configuration.properties).filter(
    (key) => !(key in schema.properties),
  );
  assert.ok(extra.length > 0);
  for (const key of extra) {
    assert.match(key, /^scopecache\.server\./);
  }
});

test("extension id is scopecache.scopecache", () => {
  assert.equal(`${pkg.publisher}.${pkg.name}`, "scopecache.scopecache");
});

test("unset settings are sent as the schema defaults, nested camelCase", () => {
  const sent = buildServerSettings(() => undefined);
  assert.equal(sent.provider, "auto");
  assert.equal(sent.endpoint, null);
  assert.equal((sent.cache as Record<string, unknown>).policy, "hybrid");
  assert.equal((sent.transport as Record<string, unknown>).http2, "auto");
  assert.equal("server" in sent, false);
});

test("user values override defaults and keep their nesting", () => {
  const sent = buildServerSettings(
    readerFromObject({
      endpoint: "https://127.0.0.1:8443/v1",
      transport: { caFile: "/tmp/ca.pem" },
      cache: { l2: "none" },
      server: { command: ["x"] },
    }),
  );
  assert.equal(sent.endpoint, "https://127.0.0.1:8443/v1");
  assert.deepEqual(
    { caFile: (sent.transport as Record<string, unknown>).caFile, l2: (sent.cache as Record<string, unknown>).l2 },
    { caFile: "/tmp/ca.pem", l2: "none" },
  );
  assert.equal("server" in sent, false);
});

test("every schema key is sent, none invented", () => {
  const sent = buildServerSettings(() => undefined);
  const flat: string[] = [];
  const walk = (node: Record<string, unknown>, prefix: string): void => {
    for (const [key, value] of Object.entries(node)) {
      if (value !== null && typeof value === "object" && !Array.isArray(value)) {
        walk(value as Record<string, unknown>, `${prefix}${key}.`);
      } else {
        flat.push(prefix + key);
      }
    }
  };
  walk(sent, "");
  assert.deepEqual(flat.sort(), [...SERVER_SETTINGS.keys()].sort());
});

test("default list values are copied, not shared between calls", () => {
  const first = buildServerSettings(() => undefined);
  (first.exclude as string[]).push("mutated");
  const second = buildServerSettings(() => undefined);
  assert.equal((second.exclude as string[]).includes("mutated"), false);
});

test("unset, the server command is the bundled server's, and carries the log level", () => {
  assert.equal(pkg.contributes.configuration.properties["scopecache.server.command"].default.length, 0);
  assert.equal(configuredCommand(readerFromObject({ server: { command: [] } })), undefined);
  const bundled = ["/storage/venv/bin/scopecache", "serve"];
  assert.deepEqual(serverCommand(readerFromObject({ server: { command: [], logLevel: "INFO" } }), bundled), {
    command: "/storage/venv/bin/scopecache",
    args: ["serve", "--log-level", "INFO"],
  });
  // a package without a bundle (a development build) runs scopecache from PATH
  assert.deepEqual(serverCommand(() => undefined), { command: "scopecache", args: ["serve"] });
  assert.deepEqual(
    serverCommand(readerFromObject({ server: { command: ["/py", "-m", "lsp_server", "serve"], logLevel: "DEBUG" } })),
    { command: "/py", args: ["-m", "lsp_server", "serve", "--log-level", "DEBUG"] },
  );
});

test("the language client gets the command with no transport, so nothing is appended to it", () => {
  const options = serverOptions(readerFromObject({ server: { command: ["/venv/bin/scopecache", "serve"] } }));
  assert.deepEqual(options, { command: "/venv/bin/scopecache", args: ["serve"] });
  assert.equal("transport" in options, false);
});

test("a set server command overrides the bundled server", () => {
  const read = readerFromObject({ server: { command: ["/venv/bin/scopecache", "serve"] } });
  assert.deepEqual(configuredCommand(read), ["/venv/bin/scopecache", "serve"]);
  assert.equal(serverCommand(read, ["/storage/venv/bin/scopecache", "serve"]).command, "/venv/bin/scopecache");
});

test("a malformed server command counts as unset", () => {
  assert.equal(configuredCommand(readerFromObject({ server: { command: "scopecache serve" } })), undefined);
  assert.equal(configuredCommand(readerFromObject({ server: { command: [1, 2] } })), undefined);
  assert.equal(serverCommand(readerFromObject({ server: { command: "scopecache serve" } })).command, "scopecache");
});

test("changing the server command restarts, changing a server setting does not", () => {
  assert.equal(needsRestart("server.command"), true);
  assert.equal(needsRestart("cache.policy"), false);
  assert.equal(needsRestart("completion.listAlongsideInline"), true);
});
