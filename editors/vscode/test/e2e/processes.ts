/**
 * Real processes for the end-to-end test: the reference completion service
 * and the language server, found through environment variables so CI and
 * developers can point at any install.
 *
 *   SCOPECACHE_SERVER    server command line (default: <repo>/.venv/bin/scopecache serve)
 *   SCOPECACHE_UPSTREAM  reference service command line (default: <repo>/.venv/bin/scopecache upstream)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

import { readerFromObject, serverOptions } from "../../src/settings";

/** The repository root, from out/test/e2e inside editors/vscode. */
export const REPO = resolve(__dirname, "..", "..", "..", "..", "..");

function commandLine(envName: string, subcommand: string): string[] {
  const fromEnv = process.env[envName];
  if (fromEnv && fromEnv.trim()) {
    return fromEnv.trim().split(/\s+/);
  }
  const venv = join(REPO, ".venv", "bin", "scopecache");
  return [existsSync(venv) ? venv : "scopecache", subcommand];
}

export function serverCommandLine(): string[] {
  return commandLine("SCOPECACHE_SERVER", "serve");
}

export function upstreamCommandLine(): string[] {
  return commandLine("SCOPECACHE_UPSTREAM", "upstream");
}

/** A scratch directory removed by `cleanup`. */
export function scratchDir(): string {
  return mkdtempSync(join(tmpdir(), "scopecache-e2e-"));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

async function waitFor<T>(probe: () => T | undefined, what: string, timeoutMs: number, child: ChildProcess): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) {
      return value;
    }
    if (child.exitCode !== null) {
      throw new Error(`${what}: process exited with ${child.exitCode}`);
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not ready after ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A running reference completion service over TLS with a self-signed CA. */
export interface ReferenceService {
  process: ChildProcess;
  endpoint: string;
  caFile: string;
}

export async function startReferenceService(dir: string, corpus: string): Promise<ReferenceService> {
  const [command, ...args] = upstreamCommandLine();
  const portFile = join(dir, "port");
  const child = spawn(
    command,
    [...args, "--port", "0", "--port-file", portFile, "--tls-self-signed", dir, "--corpus", corpus],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  const port = await waitFor(
    () => {
      const text = existsSync(portFile) ? readFileSync(portFile, "utf8").trim() : "";
      return /^\d+$/.test(text) ? Number(text) : undefined;
    },
    "reference service",
    30_000,
    child,
  );
  return { process: child, endpoint: `https://127.0.0.1:${port}/v1`, caFile: join(dir, "ca.pem") };
}

/**
 * Starts the server from the extension's own server options (the command
 * configured as `scopecache.server.command`), the way vscode-languageclient
 * 11 starts an `Executable`: `transport: stdio` appends `--stdio`, no
 * transport runs the command as is, the other transports do not apply.
 */
export function startServer(): ChildProcess {
  const options = serverOptions(readerFromObject({ server: { command: serverCommandLine(), logLevel: "INFO" } }));
  const args = [...(options.args ?? [])];
  if (options.transport === 0 /* TransportKind.stdio */) {
    args.push("--stdio");
  } else if (options.transport !== undefined) {
    throw new Error(`the extension asks for transport ${JSON.stringify(options.transport)}; this test speaks stdio`);
  }
  return spawn(options.command, args, { ...options.options, stdio: ["pipe", "pipe", "inherit"] });
}

/** Ends a child: SIGTERM, then SIGKILL if it is still there after a grace period. */
export async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
  await exited;
  clearTimeout(timer);
}
