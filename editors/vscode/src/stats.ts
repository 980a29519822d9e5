/**
 * The server's `scopecache/stats` answer: its shape, the hit ratio and the
 * text the status bar and the "Show Cache Stats" command display.
 * No `vscode` import: unit-tested under plain Node.
 */

export const STATS_METHOD = "scopecache/stats";
export const CLEAR_CACHE_METHOD = "scopecache/clearCache";
export const ACCEPTED_COMMAND = "scopecache.accepted";

/** Counts of served suggestions by where they came from. */
export interface ServedCounts {
  exact?: number;
  typed?: number;
  inflight?: number;
  l2?: number;
  upstream?: number;
  speculative?: number;
  [source: string]: number | undefined;
}

/** What the developer accepted and kept, for one group (overall, or one source). */
export interface AcceptanceCounts {
  shown: number;
  accepted: number;
  acceptedChars: number;
  retainedChars30s: number;
  retainedChars120s: number;
  /** Never accepted, but typed by hand through half their first line or more. */
  typedThrough?: number;
  /** Accepted characters whose short / long window has been counted. */
  measuredChars30s?: number;
  measuredChars120s?: number;
}

/** `acceptance` of `scopecache/stats`. */
export interface AcceptanceStats extends AcceptanceCounts {
  bySource?: Record<string, AcceptanceCounts>;
  byKind?: { full?: number; word?: number; line?: number };
  windowsSeconds?: number[];
  mutedSources?: string[];
}

/** Where the server's completion service stands: `endpoint` of `scopecache/stats`. */
export interface EndpointStats {
  /** The endpoint in use (configured or found on loopback), or null. */
  url: string | null;
  /** `llamacpp`, `ollama`, `openai`, or null when none is known. */
  kind: string | null;
  /**
   * `configured` (the endpoint setting), `found` (discovered on 127.0.0.1),
   * `loading` (a server still loading its model), `searching`, `none`
   * (nothing found: completions off) or `off` (no endpoint, discovery off).
   */
  state: string;
  source: "configured" | "discovered" | null;
  /** The server's name as users know it, e.g. "llama.cpp". */
  name?: string;
  model?: string;
  /** One sentence saying what was found, or what to set. */
  message?: string;
}

/** The fields of `scopecache/stats` the extension reads (the server may send more). */
export interface ServerStats {
  requests: number;
  served: ServedCounts;
  upstreamRequests: number;
  upstreamErrors: number;
  cancelled: number;
  latencyMs: { p50: number | null; p95: number | null; p99: number | null };
  cache: { policy: string; capacity: number; size: number };
  transport: { dnsLookups: number; connectionsOpened: number; circuit?: string };
  acceptance?: AcceptanceStats;
  endpoint?: EndpointStats;
}

/** Where the language server is in its life, as the extension sees it. */
export type ServerState = "starting" | "running" | "restarting" | "stopped";

/** Status bar text and tooltip while the server cannot answer (not "running"). */
export function serverStateStatus(state: Exclude<ServerState, "running">): { text: string; tooltip: string } {
  switch (state) {
    case "starting":
      return { text: "$(sync~spin) scopecache", tooltip: "The scopecache server is starting" };
    case "restarting":
      return { text: "$(sync~spin) scopecache", tooltip: "The scopecache server stopped and is being restarted" };
    case "stopped":
      return { text: "$(circle-slash) scopecache", tooltip: "The scopecache server is not running" };
  }
}

/** What the status bar says about the completion service. */
export type UpstreamState = "idle" | "ok" | "errors" | "down";

function count(value: number | undefined): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** All served suggestions, whatever their source. */
export function servedTotal(stats: ServerStats): number {
  return Object.values(stats.served ?? {}).reduce<number>((sum, n) => sum + count(n), 0);
}

/** Share of served suggestions that did not need their own upstream call; null before the first. */
export function hitRatio(stats: ServerStats): number | null {
  const total = servedTotal(stats);
  if (total === 0) {
    return null;
  }
  return (total - count(stats.served?.upstream)) / total;
}

/**
 * The upstream state, comparing this poll with the previous one: "down" when
 * the circuit is open, "errors" when errors grew since the last poll, "idle"
 * before the first upstream request, otherwise "ok".
 */
export function upstreamState(current: ServerStats, previous?: ServerStats): UpstreamState {
  if (current.transport?.circuit === "open") {
    return "down";
  }
  const errorsBefore = previous ? count(previous.upstreamErrors) : 0;
  if (count(current.upstreamErrors) > errorsBefore) {
    return "errors";
  }
  return count(current.upstreamRequests) === 0 ? "idle" : "ok";
}

/** Percentage text: "67%", or "–" when there is nothing to divide yet. */
export function formatRatio(ratio: number | null): string {
  return ratio === null ? "–" : `${Math.round(ratio * 100)}%`;
}

/** Whether completions are off because there is no server to ask (nothing found, or discovery off). */
export function noServer(stats: ServerStats): boolean {
  const state = stats.endpoint?.state;
  return state === "none" || state === "off";
}

/**
 * The status bar text (codicons allowed): `$(zap) 67% · upstream ok`, or with
 * a server found on loopback `$(zap) 67% · llama.cpp ok`; while there is no
 * server `$(circle-slash) scopecache: no server · set scopecache.endpoint`,
 * while it loads its model
 * `$(sync~spin) llama.cpp loading`.
 */
export function statusText(stats: ServerStats, state: UpstreamState): string {
  const endpoint = stats.endpoint;
  const name = endpoint?.name ?? "server";
  switch (endpoint?.state) {
    case "none":
    case "off":
      return "$(circle-slash) scopecache: no server · set scopecache.endpoint";
    case "searching":
      return "$(sync~spin) scopecache: looking for a server";
    case "loading":
      return `$(sync~spin) ${name} loading`;
  }
  const icon = state === "down" || state === "errors" ? "$(warning)" : "$(zap)";
  const service = endpoint?.state === "found" ? name : "upstream";
  return `${icon} ${formatRatio(hitRatio(stats))} · ${service} ${state}`;
}

/** The tooltip's first line: which server is used and where it came from, or what to set. */
export function formatEndpoint(endpoint: EndpointStats | undefined): string[] {
  if (!endpoint) {
    return [];
  }
  if (endpoint.message) {
    return [`Completion server: ${endpoint.message}`];
  }
  return [`Completion server: ${endpoint.url ?? "none"} (${endpoint.state})`];
}

function ms(value: number | null | undefined): string {
  return typeof value === "number" ? `${value.toFixed(1)} ms` : "–";
}

function percent(part: number | undefined, whole: number | undefined): string {
  return count(whole) > 0 ? `${Math.round((100 * count(part)) / count(whole))}%` : "–";
}

/**
 * What was accepted and kept, in two lines (overall, then by source); none
 * before the server showed anything. "Kept" is the share of the accepted
 * characters counted so far that were still in the file after each window.
 */
export function formatAcceptance(acceptance: AcceptanceStats | undefined): string[] {
  if (!acceptance || count(acceptance.shown) === 0) {
    return [];
  }
  const [short, long] = acceptance.windowsSeconds ?? [30, 120];
  const kinds = acceptance.byKind ?? {};
  const muted = new Set(acceptance.mutedSources ?? []);
  const sources = Object.entries(acceptance.bySource ?? {}).map(
    ([source, c]) =>
      `${source}${muted.has(source) ? " (muted)" : ""} ${count(c.accepted)} of ${count(c.shown)}, ` +
      `kept ${percent(c.retainedChars30s, c.measuredChars30s)} / ${percent(c.retainedChars120s, c.measuredChars120s)}`,
  );
  return [
    `Accepted: ${count(acceptance.accepted)} of ${count(acceptance.shown)} shown ` +
      `(${percent(acceptance.accepted, acceptance.shown)}), ${count(acceptance.acceptedChars)} characters ` +
      `(full ${count(kinds.full)}, word ${count(kinds.word)}, line ${count(kinds.line)}); ` +
      `kept ${percent(acceptance.retainedChars30s, acceptance.measuredChars30s)} after ${short} s, ` +
      `${percent(acceptance.retainedChars120s, acceptance.measuredChars120s)} after ${long} s; ` +
      `typed through by hand ${count(acceptance.typedThrough)}`,
    `Accepted by source: ${sources.join("; ") || "none yet"}`,
  ];
}

/** A plain-text report of the stats, one fact per line (tooltip and "Show Cache Stats"). */
export function formatStatsReport(stats: ServerStats, state: UpstreamState): string {
  const served = stats.served ?? {};
  const sources = Object.keys(served)
    .map((source) => `${source} ${count(served[source])}`)
    .join(", ");
  return [
    ...formatEndpoint(stats.endpoint),
    `Hit ratio: ${formatRatio(hitRatio(stats))} of ${servedTotal(stats)} served suggestions`,
    `Served by source: ${sources || "none yet"}`,
    `Requests: ${count(stats.requests)} (cancelled ${count(stats.cancelled)})`,
    `Upstream: ${state}, ${count(stats.upstreamRequests)} requests, ${count(stats.upstreamErrors)} errors`,
    `Latency: p50 ${ms(stats.latencyMs?.p50)}, p95 ${ms(stats.latencyMs?.p95)}, p99 ${ms(stats.latencyMs?.p99)}`,
    `Cache: ${stats.cache?.policy ?? "?"}, ${count(stats.cache?.size)} of ${count(stats.cache?.capacity)} entries`,
    `Transport: ${count(stats.transport?.dnsLookups)} DNS lookups, ${count(stats.transport?.connectionsOpened)} connections opened`,
    ...formatAcceptance(stats.acceptance),
  ].join("\n");
}
