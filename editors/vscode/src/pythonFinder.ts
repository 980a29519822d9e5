/**
 * Finding a Python that can run the bundled server: each candidate (the
 * Python extension's interpreter, then `python3` and friends on PATH) is
 * run once with a probe that prints its real executable and version, and
 * the first whose version the bundle has wheels for wins. What was tried is
 * kept, so the message when nothing fits names what was found.
 *
 * Nothing here imports `vscode`: it is unit-tested under plain Node.
 */
import { execFile } from "node:child_process";

/** A command that may start a Python, and where it came from (for messages). */
export interface PythonCandidate {
  command: string;
  args: string[];
  source: string;
}

/** A Python that answered the probe. */
export interface FoundPython {
  /** `sys.executable`: the interpreter itself, not a shim or launcher */
  executable: string;
  /** e.g. `3.12.4` */
  version: string;
  source: string;
}

/** What a finished process left. */
export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** set when the process could not be started at all: its code (e.g. ENOENT) and message */
  error?: { code: string; message: string };
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** Runs a program without a shell and collects its output; never rejects. */
export type ProcessRunner = (command: string, args: string[], options?: RunOptions) => Promise<ProcessResult>;

export const runProcess: ProcessRunner = (command, args, options = {}) =>
  new Promise((resolve) => {
    execFile(
      command,
      args,
      { env: options.env, timeout: options.timeoutMs ?? 30_000, maxBuffer: 16 * 1024 * 1024, windowsHide: true },
      (error, stdout, stderr) => {
        // an exit status is a number; a process that never started has an errno string
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
        const spawnError = typeof error?.code === "string" ? { code: error.code, message: error.message } : undefined;
        resolve({ code, stdout: String(stdout), stderr: String(stderr), ...(spawnError ? { error: spawnError } : {}) });
      },
    );
  });

/**
 * Prints what the extension needs to know; `import venv` makes a Python
 * without the venv module (a few minimal builds) fail here, not later.
 */
export const PROBE =
  "import json, sys, venv; " +
  "print(json.dumps({'executable': sys.executable, 'version': '%d.%d.%d' % sys.version_info[:3]}))";

/** The commands tried after the Python extension's interpreter, in order. */
export function pathCandidates(platform: NodeJS.Platform = process.platform): PythonCandidate[] {
  const onPath = (command: string, args: string[] = []): PythonCandidate => ({
    command,
    args,
    source: `${[command, ...args].join(" ")} on PATH`,
  });
  if (platform === "win32") {
    return [onPath("py", ["-3"]), onPath("python"), onPath("python3")];
  }
  // python3 first (what the user runs); then versioned names, for systems
  // whose python3 is older than a Python installed beside it
  return ["python3", "python3.14", "python3.13", "python3.12", "python3.11", "python"].map((c) => onPath(c));
}

/** `major.minor` of a version such as `3.12.4`. */
export function minorVersion(version: string): string {
  return version.split(".").slice(0, 2).join(".");
}

/** "3.11 to 3.14" (or just "3.12"), for messages. */
export function describeVersions(supported: readonly string[]): string {
  return supported.length > 1 ? `${supported[0]} to ${supported[supported.length - 1]}` : (supported[0] ?? "");
}

/** Runs the probe with `candidate`: the Python it found, or why it does not count. */
export async function probePython(
  candidate: PythonCandidate,
  supported: readonly string[],
  run: ProcessRunner = runProcess,
): Promise<FoundPython | string> {
  const result = await run(candidate.command, [...candidate.args, "-c", PROBE], { timeoutMs: 20_000 });
  if (result.error?.code === "ENOENT") {
    return "not found";
  }
  if (result.code !== 0) {
    const why = (result.stderr.trim().split(/\r?\n/).pop() ?? "").slice(0, 200);
    return `does not run (${why || result.error?.message || `exit code ${result.code}`})`;
  }
  let answer: { executable?: unknown; version?: unknown };
  try {
    answer = JSON.parse(result.stdout.trim().split(/\r?\n/).pop() ?? "");
  } catch {
    return "does not run (no answer to the probe)";
  }
  const { executable, version } = answer;
  if (typeof executable !== "string" || typeof version !== "string" || !executable) {
    return "does not run (no answer to the probe)";
  }
  if (!supported.includes(minorVersion(version))) {
    return `Python ${version} (needs ${describeVersions(supported)})`;
  }
  return { executable, version, source: candidate.source };
}

/** The first candidate that fits, and one line per candidate tried before it. */
export async function findPython(
  candidates: readonly PythonCandidate[],
  supported: readonly string[],
  run: ProcessRunner = runProcess,
): Promise<{ found?: FoundPython; tried: string[] }> {
  const tried: string[] = [];
  for (const candidate of candidates) {
    const outcome = await probePython(candidate, supported, run);
    if (typeof outcome !== "string") {
      return { found: outcome, tried };
    }
    tried.push(`${candidate.source}: ${outcome}`);
  }
  return { tried };
}
