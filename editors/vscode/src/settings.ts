/**
 * Settings mapping: VS Code's `scopecache.*` configuration to what the server expects.
 *
 * The server's keys come from `settings-schema.json`, generated from the
 * server's own settings model (scripts/settings_schema.py), so the extension
 * sends exactly the keys the server knows. `scopecache.server.*` keys belong
 * to the extension (how to start the server) and are never sent.
 * Nothing here imports `vscode`: the mapping is unit-tested under plain Node.
 */
import type { Executable } from "vscode-languageclient/node";

import schema from "../settings-schema.json";

export const SECTION = "scopecache";
export const EXTENSION_KEY_PREFIX = "server.";

/** One property of the generated settings schema. */
export interface SettingSchema {
  type: string | string[];
  default: unknown;
  description: string;
  enum?: unknown[];
  items?: { type: string };
}

/** Every server setting, keyed by its dotted path below `scopecache.` (e.g. `cache.policy`). */
export const SERVER_SETTINGS: ReadonlyMap<string, SettingSchema> = new Map(
  Object.entries(schema.properties as Record<string, SettingSchema>).map(([key, prop]) => [
    key.slice(SECTION.length + 1),
    prop,
  ]),
);

/** Reads one setting by its dotted path below `scopecache.`; `undefined` means "not set". */
export type SettingReader = (key: string) => unknown;

/** A reader over a nested object such as `{ cache: { l2: "none" } }` (tests, scripts). */
export function readerFromObject(values: Record<string, unknown>): SettingReader {
  return (key) => {
    let node: unknown = values;
    for (const part of key.split(".")) {
      if (node === null || typeof node !== "object" || !(part in node)) {
        return undefined;
      }
      node = (node as Record<string, unknown>)[part];
    }
    return node;
  };
}

/**
 * The server's settings as one nested camelCase object: every key of the
 * schema, with the user's value or the schema default. This is what goes out
 * as `initializationOptions` and in `workspace/didChangeConfiguration`.
 */
export function buildServerSettings(read: SettingReader): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [key, prop] of SERVER_SETTINGS) {
    const value = read(key);
    const parts = key.split(".");
    let node = result;
    for (const part of parts.slice(0, -1)) {
      node = (node[part] ??= {}) as Record<string, unknown>;
    }
    node[parts[parts.length - 1]] = structuredClone(value === undefined ? prop.default : value);
  }
  return result;
}

/** How the extension starts the language server. */
export interface ServerCommand {
  command: string;
  args: string[];
}

/** The server from PATH: what runs when the package bundles none (a development build). */
export const DEFAULT_SERVER_COMMAND: readonly string[] = ["scopecache", "serve"];

/**
 * The command `scopecache.server.command` sets, or undefined when it is unset
 * (the default, an empty list; a malformed value counts as unset): then the
 * extension starts the server it bundles.
 */
export function configuredCommand(read: SettingReader): string[] | undefined {
  const configured = read("server.command");
  return Array.isArray(configured) && configured.length > 0 && configured.every((a) => typeof a === "string")
    ? [...(configured as string[])]
    : undefined;
}

/**
 * The server command line: `scopecache.server.command` when set, else
 * `automatic` (the bundled server's), with `scopecache.server.logLevel`.
 */
export function serverCommand(read: SettingReader, automatic: readonly string[] = DEFAULT_SERVER_COMMAND): ServerCommand {
  const argv = configuredCommand(read) ?? [...automatic];
  const args = argv.slice(1);
  const level = read("server.logLevel");
  if (typeof level === "string" && !args.includes("--log-level")) {
    args.push("--log-level", level);
  }
  return { command: argv[0], args };
}

/**
 * What the language client is given to start the server: the command with no
 * `transport`. With `transport: TransportKind.stdio` vscode-languageclient
 * appends `--stdio` to the arguments; without one it speaks stdio as is.
 */
export function serverOptions(read: SettingReader, automatic?: readonly string[]): Executable {
  const { command, args } = serverCommand(read, automatic);
  return { command, args };
}

/**
 * Keys (below `scopecache.`) that take effect only in a new server: the
 * command line, and what the server decides once at initialize (whether it
 * offers list completion). A change restarts the server.
 */
export const RESTART_KEYS: readonly string[] = ["server.command", "server.logLevel", "completion.listAlongsideInline"];

/** True when a change to `key` (below `scopecache.`) needs a server restart rather than a notification. */
export function needsRestart(key: string): boolean {
  return RESTART_KEYS.includes(key);
}
