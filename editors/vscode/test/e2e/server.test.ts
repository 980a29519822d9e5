/**
 * End to end: the real Python language server, configured exactly as the
 * extension configures it (same initializationOptions builder), completing a
 * Python document from the real reference service over TLS.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  ConfigurationRequest,
  DidChangeConfigurationNotification,
  DidOpenTextDocumentNotification,
  ExecuteCommandRequest,
  ExitNotification,
  InitializeRequest,
  InitializedNotification,
  InlineCompletionRequest,
  type InlineCompletionItem,
  type InlineCompletionList,
  LogMessageNotification,
  MessageType,
  type ProtocolConnection,
  RegistrationRequest,
  ShowMessageNotification,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  UnregistrationRequest,
  createProtocolConnection,
} from "vscode-languageserver-protocol/node";

import { buildServerSettings, readerFromObject } from "../../src/settings";
import { ACCEPTED_COMMAND, CLEAR_CACHE_METHOD, STATS_METHOD, type ServerStats, hitRatio } from "../../src/stats";
import {
  type ReferenceService,
  removeDir,
  scratchDir,
  startReferenceService,
  startServer,
  stopProcess,
} from "./processes";

const CORPUS = [
  "import json",
  "",
  "",
  "def parse_header(line):",
  '    key, _, value = line.partition(":")',
  "    return key.strip().lower(), value.strip()",
  "",
].join("\n");
// The document stops inside line 4; the service continues it to the end of the line.
const TYPED = "    key, _, value = line.part";
const DOCUMENT = "import json\n\n\ndef parse_header(line):\n" + TYPED;
const EXPECTED = 'ition(":")';
const URI = "file:///work/e2e/headers.py";
const POSITION = { line: 4, character: TYPED.length };

let dir: string;
let service: ReferenceService | undefined;
let server: ChildProcess | undefined;
let connection: ProtocolConnection;
let settings: Record<string, unknown>;
const problems: string[] = [];

before(async () => {
  dir = scratchDir();
  const corpus = join(dir, "corpus.py");
  writeFileSync(corpus, CORPUS);
  service = await startReferenceService(dir, corpus);
  // Exactly what the extension sends: the mapped VS Code configuration.
  settings = buildServerSettings(
    readerFromObject({
      endpoint: service.endpoint,
      provider: "openai",
      model: "m",
      transport: { caFile: service.caFile },
      cache: { l2: "none" },
      // upstream requests are counted exactly below; prefetch has its own tests
      speculative: { enabled: false },
    }),
  );
  server = startServer();
  connection = createProtocolConnection(
    new StreamMessageReader(server.stdout!),
    new StreamMessageWriter(server.stdin!),
  );
  connection.onNotification(ShowMessageNotification.type, (p) => {
    if (p.type === MessageType.Error || p.type === MessageType.Warning) {
      problems.push(p.message);
    }
  });
  connection.onNotification(LogMessageNotification.type, () => undefined);
  connection.onRequest(RegistrationRequest.type, () => undefined);
  connection.onRequest(UnregistrationRequest.type, () => undefined);
  connection.onRequest(ConfigurationRequest.type, (p) => p.items.map(() => settings));
  connection.listen();
  const init = await connection.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: null,
    capabilities: {
      general: { positionEncodings: ["utf-16"] },
      textDocument: { inlineCompletion: { dynamicRegistration: false }, synchronization: {} },
      workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: false } },
    },
    initializationOptions: settings,
  });
  assert.ok(init.capabilities.inlineCompletionProvider, "server offers inline completion");
  await connection.sendNotification(InitializedNotification.type, {});
  await connection.sendNotification(DidOpenTextDocumentNotification.type, {
    textDocument: { uri: URI, languageId: "python", version: 1, text: DOCUMENT },
  });
});

after(async () => {
  try {
    if (connection && server?.exitCode === null) {
      await Promise.race([
        connection.sendRequest(ShutdownRequest.type).then(() => connection.sendNotification(ExitNotification.type)),
        new Promise((r) => setTimeout(r, 3000)),
      ]);
    }
  } finally {
    connection?.dispose();
    await stopProcess(server);
    await stopProcess(service?.process);
    removeDir(dir);
  }
});

function items(result: InlineCompletionList | InlineCompletionItem[] | null): InlineCompletionItem[] {
  if (result === null) {
    return [];
  }
  return Array.isArray(result) ? result : result.items;
}

/** The text the user would see after the cursor: insertText minus what its range already covers. */
function ghostText(item: InlineCompletionItem): string {
  const text = typeof item.insertText === "string" ? item.insertText : item.insertText.value;
  if (!item.range) {
    return text;
  }
  const line = DOCUMENT.split("\n")[item.range.start.line];
  const covered = line.slice(item.range.start.character, POSITION.character);
  assert.ok(text.startsWith(covered), `insertText ${JSON.stringify(text)} starts with ${JSON.stringify(covered)}`);
  return text.slice(covered.length);
}

async function complete(): Promise<InlineCompletionItem[]> {
  const result = await connection.sendRequest(InlineCompletionRequest.type, {
    textDocument: { uri: URI },
    position: POSITION,
    context: { triggerKind: 2 },
  });
  return items(result);
}

test("the extension's settings are accepted by the server without complaint", () => {
  assert.deepEqual(problems, []);
});

test("an inline completion continues the line from the reference service", { timeout: 30_000 }, async () => {
  const [item] = await complete();
  assert.ok(item, "one suggestion");
  assert.equal(ghostText(item), EXPECTED);
  assert.equal(item.command?.command, ACCEPTED_COMMAND);
  await connection.sendRequest(ExecuteCommandRequest.type, {
    command: ACCEPTED_COMMAND,
    arguments: item.command?.arguments ?? [],
  });
});

test("the same context again is served from the cache", { timeout: 30_000 }, async () => {
  const [item] = await complete();
  assert.equal(ghostText(item), EXPECTED);
  const stats = await connection.sendRequest<ServerStats>(STATS_METHOD, {});
  assert.equal(stats.served.upstream, 1);
  assert.ok((stats.served.exact ?? 0) + (stats.served.typed ?? 0) >= 1, JSON.stringify(stats.served));
  assert.equal(stats.upstreamRequests, 1);
  assert.equal(hitRatio(stats), 0.5);
});

test("a settings change is applied without complaint", async () => {
  settings = buildServerSettings(
    readerFromObject({ ...settings, cache: { ...(settings.cache as object), policy: "lru" } }),
  );
  await connection.sendNotification(DidChangeConfigurationNotification.type, {
    settings: { scopecache: settings },
  });
  const stats = await connection.sendRequest<ServerStats>(STATS_METHOD, {});
  assert.equal(stats.cache.policy, "lru");
  assert.deepEqual(problems, []);
});

test("clearing the cache reports how many entries went", async () => {
  const result = await connection.sendRequest<{ cleared: number }>(CLEAR_CACHE_METHOD, {});
  assert.ok(result.cleared >= 0);
  const stats = await connection.sendRequest<ServerStats>(STATS_METHOD, {});
  assert.equal(stats.cache.size, 0);
});
