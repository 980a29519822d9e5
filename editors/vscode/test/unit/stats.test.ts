/** Stats: hit ratio, upstream state and the texts the status bar shows. */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  type ServerStats,
  formatStatsReport,
  hitRatio,
  servedTotal,
  serverStateStatus,
  statusText,
  upstreamState,
} from "../../src/stats";

function stats(overrides: Partial<ServerStats> = {}): ServerStats {
  return {
    requests: 10,
    served: { exact: 4, typed: 1, inflight: 0, l2: 1, upstream: 2, speculative: 0 },
    upstreamRequests: 2,
    upstreamErrors: 0,
    cancelled: 1,
    latencyMs: { p50: 0.8, p95: 41.2, p99: 80 },
    cache: { policy: "hybrid", capacity: 2048, size: 3 },
    transport: { dnsLookups: 1, connectionsOpened: 1 },
    ...overrides,
  };
}

test("hit ratio counts every source but upstream as a hit", () => {
  assert.equal(servedTotal(stats()), 8);
  assert.equal(hitRatio(stats()), 6 / 8);
});

test("hit ratio is unknown before anything was served", () => {
  assert.equal(hitRatio(stats({ served: {} })), null);
  assert.match(statusText(stats({ served: {} }), "idle"), /– · upstream idle/);
});

test("status text shows the rounded percentage and the upstream state", () => {
  assert.equal(statusText(stats(), "ok"), "$(zap) 75% · upstream ok");
  assert.equal(statusText(stats(), "down"), "$(warning) 75% · upstream down");
});

test("upstream is idle before the first request and ok after", () => {
  assert.equal(upstreamState(stats({ upstreamRequests: 0 })), "idle");
  assert.equal(upstreamState(stats()), "ok");
});

test("upstream shows errors only while they keep growing", () => {
  const before = stats({ upstreamErrors: 1 });
  assert.equal(upstreamState(stats({ upstreamErrors: 2 }), before), "errors");
  assert.equal(upstreamState(stats({ upstreamErrors: 2 }), stats({ upstreamErrors: 2 })), "ok");
});

test("an open circuit means upstream is down", () => {
  const current = stats({ transport: { dnsLookups: 1, connectionsOpened: 1, circuit: "open" } });
  assert.equal(upstreamState(current), "down");
});

test("the report lists ratio, sources, latency, cache and transport", () => {
  const report = formatStatsReport(stats(), "ok");
  assert.match(report, /Hit ratio: 75% of 8 served suggestions/);
  assert.match(report, /exact 4, typed 1, inflight 0, l2 1, upstream 2, speculative 0/);
  assert.match(report, /p50 0\.8 ms, p95 41\.2 ms, p99 80\.0 ms/);
  assert.match(report, /Cache: hybrid, 3 of 2048 entries/);
  assert.match(report, /1 DNS lookups, 1 connections opened/);
});

test("missing latencies print as a dash", () => {
  const report = formatStatsReport(stats({ latencyMs: { p50: null, p95: null, p99: null } }), "idle");
  assert.match(report, /p50 –, p95 –, p99 –/);
});

test("while the server starts the status item says so instead of 'not running'", () => {
  assert.equal(serverStateStatus("starting").tooltip, "The scopecache server is starting");
  assert.match(serverStateStatus("restarting").text, /sync~spin/);
  assert.equal(serverStateStatus("stopped").text, "$(circle-slash) scopecache");
});

test("the report lists what was accepted and kept, overall and by source", () => {
  const counts = {
    shown: 8, accepted: 2, acceptedChars: 40,
    retainedChars30s: 30, retainedChars120s: 20, measuredChars30s: 40, measuredChars120s: 40,
  };
  const report = formatStatsReport(
    stats({
      acceptance: {
        ...counts,
        typedThrough: 3,
        bySource: { exact: counts, upstream: { ...counts, accepted: 0, measuredChars30s: 0, measuredChars120s: 0 } },
        byKind: { full: 1, word: 2, line: 1 },
        windowsSeconds: [30, 120],
        mutedSources: ["upstream"],
      },
    }),
    "ok",
  );
  assert.match(
    report,
    /Accepted: 2 of 8 shown \(25%\), 40 characters \(full 1, word 2, line 1\); kept 75% after 30 s, 50% after 120 s; typed through by hand 3/,
  );
  assert.match(report, /Accepted by source: exact 2 of 8, kept 75% \/ 50%; upstream \(muted\) 0 of 8, kept – \/ –$/);
});

test("nothing about acceptance before anything was shown", () => {
  assert.doesNotMatch(formatStatsReport(stats(), "ok"), /Accepted:/);
});

const FOUND = {
  url: "http://127.0.0.1:8012",
  kind: "llamacpp",
  state: "found",
  source: "discovered" as const,
  name: "llama.cpp",
  message:
    "using llama.cpp at http://127.0.0.1:8012, found on 127.0.0.1; set endpoint (scopecache.endpoint in VS Code) to use another server",
};

const NONE = {
  url: null,
  kind: null,
  state: "none",
  source: null,
  message:
    "no completion server found on 127.0.0.1 (ports 8012, 8080, 11434, 1234, 8000): completions are off; " +
    "start one (llama-server --fim-qwen-1.5b-default (port 8012) or Ollama) or set endpoint (scopecache.endpoint in VS Code) to its base URL",
};

test("a server found on loopback is named in the status text and the tooltip says where", () => {
  const found = stats({ endpoint: FOUND });
  assert.equal(statusText(found, "ok"), "$(zap) 75% · llama.cpp ok");
  assert.equal(formatStatsReport(found, "ok").split("\n")[0], `Completion server: ${FOUND.message}`);
});

test("with no server found the status says so and the tooltip names the setting", () => {
  const none = stats({ endpoint: NONE, served: {}, upstreamRequests: 0 });
  assert.equal(statusText(none, "idle"), "$(circle-slash) scopecache: no server · set scopecache.endpoint");
  assert.match(formatStatsReport(none, "idle").split("\n")[0], /^Completion server: no completion server found on 127\.0\.0\.1/);
  assert.match(formatStatsReport(none, "idle"), /scopecache\.endpoint/);
  assert.equal(statusText(stats({ endpoint: { ...NONE, state: "off" } }), "idle"), "$(circle-slash) scopecache: no server · set scopecache.endpoint");
});

test("a server loading its model is shown as loading, not as an error", () => {
  const loading = stats({
    endpoint: { ...FOUND, state: "loading", message: "llama.cpp at http://127.0.0.1:8012 is loading its model" },
  });
  assert.equal(statusText(loading, "idle"), "$(sync~spin) llama.cpp loading");
  assert.doesNotMatch(statusText(loading, "idle"), /warning/);
});

test("a configured endpoint keeps the upstream wording", () => {
  const configured = stats({
    endpoint: { url: "https://host/v1", kind: null, state: "configured", source: "configured" },
  });
  assert.equal(statusText(configured, "ok"), "$(zap) 75% · upstream ok");
  assert.equal(formatStatsReport(configured, "ok").split("\n")[0], "Completion server: https://host/v1 (configured)");
});
