/**
 * The server a platform `.vsix` carries, installed into a private virtualenv.
 *
 * The package holds `server/manifest.json` and `server/wheels/` (written by
 * scripts/package_vsix.py): the scopecache wheel and every dependency for
 * its platform, for each Python it supports, and pip's own wheel. On first
 * start the environment is made in the extension's global storage:
 *
 *   <storage>/venv/          python -m venv --without-pip (no ensurepip needed)
 *   <storage>/venv.json      what was installed, by which extension version
 *
 * and the bundled pip (run from its wheel) installs the server into it with
 * `--no-index`: no network. `venv.json` is written last, so it is what says
 * the environment is complete; a record from another extension version or
 * target, or an interpreter gone missing, makes the next start replace the
 * environment. Two windows starting at once take turns through a lock
 * directory; the second one finds the first one's environment ready.
 *
 * Nothing here imports `vscode`: it is unit-tested under plain Node.
 */
import { access, mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { devNull } from "node:os";
import { join } from "node:path";

import { type FoundPython, type ProcessResult, type ProcessRunner, runProcess } from "./pythonFinder";

/** What `server/manifest.json` says about the bundle. */
export interface BundleManifest {
  /** the VS Code target the wheels are for, e.g. `linux-x64` */
  target: string;
  /** the bundled scopecache version */
  scopecache: string;
  /** what pip installs, e.g. `scopecache[languages]==0.1.0` */
  requirement: string;
  /** the Python versions (`3.11`, ...) the wheels cover */
  pythons: string[];
  /** the file name of pip's wheel in `wheels/` */
  pip: string;
}

/** What `venv.json` records about an installed environment. */
export interface InstallRecord {
  extensionVersion: string;
  target: string;
  scopecache: string;
  python: string;
  pythonVersion: string;
}

/** A setup step that failed; `message` is what the user is told (once). */
export class ServerSetupError extends Error {
  override name = "ServerSetupError";
}

/** Where the bundle lies inside the installed extension. */
export function bundleDir(extensionPath: string): string {
  return join(extensionPath, "server");
}

/** The bundle's manifest, or undefined for a package without one (a development build). */
export async function readManifest(extensionPath: string): Promise<BundleManifest | undefined> {
  let text: string;
  try {
    text = await readFile(join(bundleDir(extensionPath), "manifest.json"), "utf8");
  } catch {
    return undefined;
  }
  const damaged = new ServerSetupError(`the extension's server bundle is damaged (${join(bundleDir(extensionPath), "manifest.json")})`);
  let data: Partial<BundleManifest>;
  try {
    data = JSON.parse(text) as Partial<BundleManifest>;
  } catch {
    throw damaged;
  }
  const fields = [data.target, data.scopecache, data.requirement, data.pip];
  if (!fields.every((f) => typeof f === "string" && f) || !Array.isArray(data.pythons) || !data.pythons.length) {
    throw damaged;
  }
  return data as BundleManifest;
}

/** The interpreter and the `scopecache` script of a virtualenv. */
export function venvPaths(venv: string, platform: NodeJS.Platform = process.platform): { python: string; scopecache: string } {
  return platform === "win32"
    ? { python: join(venv, "Scripts", "python.exe"), scopecache: join(venv, "Scripts", "scopecache.exe") }
    : { python: join(venv, "bin", "python"), scopecache: join(venv, "bin", "scopecache") };
}

/** True when `record` describes an environment this extension version installed from this bundle. */
export function recordMatches(record: unknown, extensionVersion: string, manifest: BundleManifest): boolean {
  if (record === null || typeof record !== "object") {
    return false;
  }
  const r = record as Partial<InstallRecord>;
  return r.extensionVersion === extensionVersion && r.target === manifest.target && r.scopecache === manifest.scopecache;
}

/**
 * The environment pip runs in: no pip configuration of the user's (an index
 * URL, `user = true` or `require-virtualenv` would change or break an
 * offline install into a fresh virtualenv), no PYTHONPATH.
 */
export function pipEnvironment(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(base)) {
    if (!/^(PIP_|PYTHONPATH$|PYTHONHOME$)/i.test(key)) {
      env[key] = value;
    }
  }
  env.PIP_CONFIG_FILE = devNull; // pip then reads no configuration file at all
  return env;
}

/** How long an install may take, and how old another window's lock may get before it counts as abandoned. */
export const INSTALL_TIMEOUT_MS = 10 * 60_000;
const LOCK_POLL_MS = 250;

/** The private environment of one extension installation. */
export class PrivateServerEnv {
  readonly venv: string;
  readonly recordPath: string;
  private readonly lockDir: string;

  constructor(
    readonly storageDir: string,
    readonly extensionPath: string,
    readonly extensionVersion: string,
    readonly manifest: BundleManifest,
    private readonly run: ProcessRunner = runProcess,
    private readonly platform: NodeJS.Platform = process.platform,
  ) {
    this.venv = join(storageDir, "venv");
    this.recordPath = join(storageDir, "venv.json");
    this.lockDir = join(storageDir, "install.lock");
  }

  /** The `scopecache` script when the environment is complete and current, else undefined. */
  async installed(): Promise<string | undefined> {
    let record: unknown;
    try {
      record = JSON.parse(await readFile(this.recordPath, "utf8"));
    } catch {
      return undefined;
    }
    if (!recordMatches(record, this.extensionVersion, this.manifest)) {
      return undefined;
    }
    const { python, scopecache } = venvPaths(this.venv, this.platform);
    try {
      // the venv's python links to the interpreter it was made from: gone when that was removed
      await Promise.all([access(python), access(scopecache)]);
    } catch {
      return undefined;
    }
    return scopecache;
  }

  /**
   * Makes the environment with `python` and installs the bundle into it
   * (unless another window just did); returns the `scopecache` script.
   * `report` hears each step.
   */
  async install(python: FoundPython, report: (step: string) => void = () => undefined): Promise<string> {
    await mkdir(this.storageDir, { recursive: true });
    return this.locked(async () => {
      const ready = await this.installed();
      if (ready) {
        return ready;
      }
      await rm(this.recordPath, { force: true });
      await rm(this.venv, { recursive: true, force: true });
      report(`creating a Python ${python.version} environment`);
      this.check(
        await this.run(python.executable, ["-m", "venv", "--without-pip", this.venv], { timeoutMs: 120_000 }),
        `creating a virtualenv with ${python.executable}`,
      );
      report(`installing scopecache ${this.manifest.scopecache} from the bundled wheels`);
      const wheels = join(bundleDir(this.extensionPath), "wheels");
      const paths = venvPaths(this.venv, this.platform);
      const pip = join(wheels, this.manifest.pip, "pip");
      this.check(
        await this.run(
          paths.python,
          [
            pip, "install", "--no-index", "--find-links", wheels, "--no-cache-dir",
            "--disable-pip-version-check", "--no-input", "--quiet", this.manifest.requirement,
          ],
          { env: pipEnvironment(), timeoutMs: INSTALL_TIMEOUT_MS },
        ),
        "installing the bundled wheels",
      );
      const version = this.check(
        await this.run(paths.scopecache, ["--version"], { timeoutMs: 60_000 }),
        "running the installed scopecache",
      );
      if (version.trim() !== `scopecache ${this.manifest.scopecache}`) {
        throw new ServerSetupError(`the installed server says ${JSON.stringify(version.trim())}, not scopecache ${this.manifest.scopecache}`);
      }
      const record: InstallRecord = {
        extensionVersion: this.extensionVersion,
        target: this.manifest.target,
        scopecache: this.manifest.scopecache,
        python: python.executable,
        pythonVersion: python.version,
      };
      await writeFile(this.recordPath, JSON.stringify(record, null, 2) + "\n");
      return paths.scopecache;
    });
  }

  /** `result`'s stdout, or a ServerSetupError naming `step` and the end of its stderr. */
  private check(result: ProcessResult, step: string): string {
    if (result.code === 0) {
      return result.stdout;
    }
    const tail = result.stderr.trim().split(/\r?\n/).slice(-6).join("\n");
    const ended = result.code === null ? "it was stopped (timed out)" : `exit code ${result.code}`;
    const why = tail || result.error?.message || ended;
    throw new ServerSetupError(`${step} failed: ${why}`);
  }

  /** Runs `body` holding the install lock (a directory: creating one is atomic). */
  private async locked<T>(body: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + INSTALL_TIMEOUT_MS;
    for (;;) {
      try {
        await mkdir(this.lockDir);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
          throw error;
        }
      }
      if (await this.lockAbandoned()) {
        await rm(this.lockDir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new ServerSetupError(`another window has been installing the server for too long (${this.lockDir})`);
      }
      await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
    }
    try {
      await writeFile(join(this.lockDir, "owner"), `${process.pid}\n`);
      return await body();
    } finally {
      await rm(this.lockDir, { recursive: true, force: true });
    }
  }

  /** A lock whose owner process is gone, or older than any install takes. */
  private async lockAbandoned(): Promise<boolean> {
    try {
      const created = (await stat(this.lockDir)).mtimeMs;
      if (Date.now() - created > INSTALL_TIMEOUT_MS) {
        return true;
      }
      const pid = Number.parseInt(await readFile(join(this.lockDir, "owner"), "utf8"), 10);
      if (Number.isInteger(pid) && pid !== process.pid) {
        try {
          process.kill(pid, 0);
        } catch (error) {
          return (error as NodeJS.ErrnoException).code === "ESRCH";
        }
      }
      return false;
    } catch {
      return false; // just created, owner not written yet (or just removed): wait
    }
  }
}
