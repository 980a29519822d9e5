/**
 * The private environment of the bundled server: made once, kept while the
 * extension version matches, replaced after an upgrade, never installed twice
 * at once. The commands run against a fake that makes the files a real
 * `venv` and `pip install` would.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, test } from "node:test";

import type { FoundPython, ProcessRunner } from "../../src/pythonFinder";
import {
  type BundleManifest,
  PrivateServerEnv,
  ServerSetupError,
  pipEnvironment,
  readManifest,
  venvPaths,
} from "../../src/serverInstall";

const MANIFEST: BundleManifest = {
  target: "linux-x64",
  scopecache: "0.1.0",
  requirement: "scopecache[languages]==0.1.0",
  pythons: ["3.11", "3.12", "3.13", "3.14"],
  pip: "pip-26.3-py3-none-any.whl",
};
const PYTHON: FoundPython = { executable: "/usr/bin/python3.12", version: "3.12.4", source: "python3 on PATH" };

const scratch: string[] = [];
afterEach(() => {
  for (const dir of scratch.splice(0)) {
    rmSync(dir, { recursive: true, force: true });
  }
});

function dirs(): { storage: string; extension: string } {
  const root = mkdtempSync(join(tmpdir(), "scopecache-install-"));
  scratch.push(root);
  return { storage: join(root, "storage"), extension: join(root, "extension") };
}

function touch(path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, "");
}

/** Does what venv, pip and `scopecache --version` would, and records each call. */
function fakeMachine(options: { pipFails?: boolean; slowPipMs?: number } = {}): { run: ProcessRunner; calls: string[][] } {
  const calls: string[][] = [];
  const run: ProcessRunner = async (command, args, runOptions) => {
    calls.push([command, ...args]);
    if (args[0] === "-m" && args[1] === "venv") {
      touch(venvPaths(args[3], "linux").python);
      return { code: 0, stdout: "", stderr: "" };
    }
    if (args[1] === "install") {
      assert.equal(runOptions?.env?.PIP_CONFIG_FILE !== undefined, true);
      await new Promise((resolve) => setTimeout(resolve, options.slowPipMs ?? 0));
      if (options.pipFails) {
        return { code: 1, stdout: "", stderr: "ERROR: Could not find a version that satisfies the requirement tree-sitter\n" };
      }
      touch(join(dirname(command), "scopecache"));
      return { code: 0, stdout: "", stderr: "" };
    }
    if (args[0] === "--version") {
      return { code: 0, stdout: "scopecache 0.1.0\n", stderr: "" };
    }
    throw new Error(`unexpected command ${command} ${args.join(" ")}`);
  };
  return { run, calls };
}

test("the first install makes a venv without pip and installs the bundle offline with the bundled pip", async () => {
  const { storage, extension } = dirs();
  const { run, calls } = fakeMachine();
  const env = new PrivateServerEnv(storage, extension, "0.1.0", MANIFEST, run, "linux");
  assert.equal(await env.installed(), undefined);

  const steps: string[] = [];
  const script = await env.install(PYTHON, (step) => steps.push(step));
  assert.equal(script, join(storage, "venv", "bin", "scopecache"));
  const wheels = join(extension, "server", "wheels");
  assert.deepEqual(calls[0], ["/usr/bin/python3.12", "-m", "venv", "--without-pip", join(storage, "venv")]);
  assert.equal(calls[1][0], join(storage, "venv", "bin", "python"));
  assert.equal(calls[1][1], join(wheels, MANIFEST.pip, "pip"));
  for (const arg of ["install", "--no-index", wheels, "scopecache[languages]==0.1.0"]) {
    assert.ok(calls[1].includes(arg), arg);
  }
  assert.deepEqual(calls[2], [script, "--version"]);
  assert.deepEqual(steps, ["creating a Python 3.12.4 environment", "installing scopecache 0.1.0 from the bundled wheels"]);
  const record = JSON.parse(readFileSync(join(storage, "venv.json"), "utf8"));
  assert.deepEqual(record, {
    extensionVersion: "0.1.0",
    target: "linux-x64",
    scopecache: "0.1.0",
    python: "/usr/bin/python3.12",
    pythonVersion: "3.12.4",
  });
  assert.equal(existsSync(join(storage, "install.lock")), false);
});

test("an installed environment of the same extension version is used as it is", async () => {
  const { storage, extension } = dirs();
  const first = fakeMachine();
  await new PrivateServerEnv(storage, extension, "0.1.0", MANIFEST, first.run, "linux").install(PYTHON);
  const second = fakeMachine();
  const env = new PrivateServerEnv(storage, extension, "0.1.0", MANIFEST, second.run, "linux");
  assert.equal(await env.installed(), join(storage, "venv", "bin", "scopecache"));
  await env.install(PYTHON);
  assert.deepEqual(second.calls, []);
});

test("an upgraded extension replaces the environment", async () => {
  const { storage, extension } = dirs();
  await new PrivateServerEnv(storage, extension, "0.1.0", MANIFEST, fakeMachine().run, "linux").install(PYTHON);
  const leftover = join(storage, "venv", "lib", "old-server.py");
  touch(leftover);

  const upgraded = new PrivateServerEnv(storage, extension, "0.2.0", MANIFEST, fakeMachine().run, "linux");
  assert.equal(await upgraded.installed(), undefined);
  await upgraded.install(PYTHON);
  assert.equal(existsSync(leftover), false);
  assert.equal(JSON.parse(readFileSync(join(storage, "venv.json"), "utf8")).extensionVersion, "0.2.0");
});

test("an environment whose interpreter is gone is not used", async () => {
  const { storage, extension } = dirs();
  const env = new PrivateServerEnv(storage, extension, "0.1.0", MANIFEST, fakeMachine().run, "linux");
  await env.install(PYTHON);
  rmSync(venvPaths(env.venv, "linux").python);
  assert.equal(await env.installed(), undefined);
});

test("a failed install says which step failed and why, and leaves no record", async () => {
  const { storage, extension } = dirs();
  const env = new PrivateServerEnv(storage, extension, "0.1.0", MANIFEST, fakeMachine({ pipFails: true }).run, "linux");
  await assert.rejects(env.install(PYTHON), (error: Error) => {
    assert.ok(error instanceof ServerSetupError);
    assert.match(error.message, /^installing the bundled wheels failed: ERROR: Could not find a version/);
    return true;
  });
  assert.equal(existsSync(join(storage, "venv.json")), false);
  assert.equal(existsSync(join(storage, "install.lock")), false);
  // the next start tries again
  const fixed = new PrivateServerEnv(storage, extension, "0.1.0", MANIFEST, fakeMachine().run, "linux");
  assert.equal(await fixed.install(PYTHON), join(storage, "venv", "bin", "scopecache"));
});

test("two windows installing at once install once", async () => {
  const { storage, extension } = dirs();
  const machine = fakeMachine({ slowPipMs: 600 });
  const one = new PrivateServerEnv(storage, extension, "0.1.0", MANIFEST, machine.run, "linux");
  const two = new PrivateServerEnv(storage, extension, "0.1.0", MANIFEST, machine.run, "linux");
  const [a, b] = await Promise.all([one.install(PYTHON), two.install(PYTHON)]);
  assert.equal(a, b);
  assert.equal(machine.calls.filter((call) => call[1] === "-m").length, 1);
});

test("a lock left by a process that is gone is taken over", async () => {
  const { storage, extension } = dirs();
  mkdirSync(join(storage, "install.lock"), { recursive: true });
  writeFileSync(join(storage, "install.lock", "owner"), "999999999\n");
  const env = new PrivateServerEnv(storage, extension, "0.1.0", MANIFEST, fakeMachine().run, "linux");
  assert.equal(await env.install(PYTHON), join(storage, "venv", "bin", "scopecache"));
});

test("pip runs with no configuration and no PIP_ variables of the user's", () => {
  const env = pipEnvironment({ PATH: "/usr/bin", PIP_INDEX_URL: "https://mirror", pip_user: "1", PYTHONPATH: "/src" });
  assert.equal(env.PATH, "/usr/bin");
  assert.equal(env.PIP_INDEX_URL, undefined);
  assert.equal(env.pip_user, undefined);
  assert.equal(env.PYTHONPATH, undefined);
  assert.ok(env.PIP_CONFIG_FILE);
});

test("a package without a bundle has no manifest; a damaged one is an error", async () => {
  const { extension } = dirs();
  assert.equal(await readManifest(extension), undefined);
  touch(join(extension, "server", "manifest.json"));
  writeFileSync(join(extension, "server", "manifest.json"), JSON.stringify({ ...MANIFEST, pythons: [] }));
  await assert.rejects(readManifest(extension), ServerSetupError);
  writeFileSync(join(extension, "server", "manifest.json"), JSON.stringify(MANIFEST));
  assert.deepEqual(await readManifest(extension), MANIFEST);
});
