/**
 * The server command when `scopecache.server.command` is not set: the server
 * this platform package carries, installed on first start (serverInstall.ts)
 * with a Python 3.11+ found here. Preferred is the interpreter the Python
 * extension has chosen (through its API), then `python3` and friends on PATH.
 * A progress notification shows while the environment is made; no suitable
 * Python is one clear error naming what to install. A package without a
 * bundle (a development build) runs `scopecache serve` from PATH, as before.
 */
import * as vscode from "vscode";

import {
  type FoundPython,
  type PythonCandidate,
  describeVersions,
  findPython,
  pathCandidates,
} from "./pythonFinder";
import { type BundleManifest, PrivateServerEnv, ServerSetupError, readManifest } from "./serverInstall";
import { DEFAULT_SERVER_COMMAND } from "./settings";

const PYTHON_EXTENSION = "ms-python.python";
/** how long the Python extension may take to activate before PATH is tried instead */
const PYTHON_EXTENSION_TIMEOUT_MS = 20_000;

/** The part of the Python extension's API used here (`@vscode/python-extension`). */
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(
      environment: { id: string; path: string } | string,
    ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  };
}

export class BundledServer {
  private pending: Promise<string[]> | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly output: vscode.LogOutputChannel,
  ) {}

  /**
   * The argv that starts the server (without `--log-level`), installing the
   * bundle first when needed. Rejects with a ServerSetupError whose message
   * is meant for the user.
   */
  command(): Promise<string[]> {
    // two starts during one install wait for the same install
    this.pending ??= this.prepare().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async prepare(): Promise<string[]> {
    const manifest = await readManifest(this.context.extensionPath);
    if (manifest === undefined) {
      return [...DEFAULT_SERVER_COMMAND];
    }
    const version = String(this.context.extension.packageJSON.version);
    const env = new PrivateServerEnv(this.context.globalStorageUri.fsPath, this.context.extensionPath, version, manifest);
    const ready = await env.installed();
    if (ready) {
      return [ready, "serve"];
    }
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "scopecache: setting up the language server" },
      async (progress) => {
        const started = Date.now();
        progress.report({ message: `looking for Python ${describeVersions(manifest.pythons)}` });
        const python = await this.findPython(manifest);
        this.output.info(`installing scopecache ${manifest.scopecache} (${manifest.target}) into ${env.venv} with Python ${python.version} (${python.executable}, ${python.source})`);
        const scopecache = await env.install(python, (step) => progress.report({ message: step }));
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        this.output.info(`scopecache ${manifest.scopecache} installed in ${seconds} s`);
        return [scopecache, "serve"];
      },
    );
  }

  private async findPython(manifest: BundleManifest): Promise<FoundPython> {
    const fromExtension = await this.pythonExtensionInterpreter();
    const candidates: PythonCandidate[] = [...(fromExtension ? [fromExtension] : []), ...pathCandidates()];
    const { found, tried } = await findPython(candidates, manifest.pythons);
    for (const line of tried) {
      this.output.info(`Python candidate ${line}`);
    }
    if (found) {
      return found;
    }
    const versions = describeVersions(manifest.pythons);
    const seen = tried.filter((line) => !line.endsWith(": not found"));
    throw new ServerSetupError(
      `the language server needs Python ${versions}, and none was found` +
        (seen.length ? ` (${seen.join("; ")})` : " (no python3 on PATH)") +
        `. Install Python ${manifest.pythons[manifest.pythons.length - 1]} (python.org, or your package manager) ` +
        "or select one with the Python extension, then run \"scopecache: Restart Server\".",
    );
  }

  /** The interpreter the Python extension has chosen for the workspace, if it is installed. */
  private async pythonExtensionInterpreter(): Promise<PythonCandidate | undefined> {
    const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION);
    if (!extension) {
      return undefined;
    }
    try {
      const api = await Promise.race([
        extension.isActive ? Promise.resolve(extension.exports) : extension.activate(),
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), PYTHON_EXTENSION_TIMEOUT_MS)),
      ]);
      const environments = api?.environments;
      if (!environments) {
        return undefined;
      }
      const resource = vscode.window.activeTextEditor?.document.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
      const resolved = await environments.resolveEnvironment(environments.getActiveEnvironmentPath(resource));
      const executable = resolved?.executable.uri?.fsPath;
      return executable ? { command: executable, args: [], source: "the Python extension's interpreter" } : undefined;
    } catch (error) {
      this.output.warn(`the Python extension did not tell its interpreter: ${String(error)}`);
      return undefined;
    }
  }
}
