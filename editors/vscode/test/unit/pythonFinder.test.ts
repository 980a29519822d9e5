/** Finding a Python for the bundled server: the first candidate whose version the bundle covers. */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  PROBE,
  type ProcessResult,
  type ProcessRunner,
  describeVersions,
  findPython,
  pathCandidates,
  runProcess,
} from "../../src/pythonFinder";

const SUPPORTED = ["3.11", "3.12", "3.13", "3.14"];

/** A runner that answers the probe for the commands in `pythons` (version or failure). */
function machine(pythons: Record<string, string | ProcessResult>): { run: ProcessRunner; calls: string[][] } {
  const calls: string[][] = [];
  const run: ProcessRunner = async (command, args) => {
    calls.push([command, ...args]);
    const found = pythons[command];
    if (found === undefined) {
      return { code: null, stdout: "", stderr: "", error: { code: "ENOENT", message: `spawn ${command} ENOENT` } };
    }
    if (typeof found !== "string") {
      return found;
    }
    return { code: 0, stdout: JSON.stringify({ executable: `/opt/${command}/bin/python`, version: found }) + "\n", stderr: "" };
  };
  return { run, calls };
}

test("python3 on PATH comes first, then the versioned names", () => {
  const names = pathCandidates("linux").map((c) => c.command);
  assert.deepEqual(names.slice(0, 2), ["python3", "python3.14"]);
  assert.ok(names.includes("python3.11"));
  assert.deepEqual(pathCandidates("win32")[0], { command: "py", args: ["-3"], source: "py -3 on PATH" });
});

test("the first candidate with a supported version wins; its real executable is used", async () => {
  const { run, calls } = machine({ python3: "3.10.12", "python3.12": "3.12.4" });
  const { found, tried } = await findPython(pathCandidates("linux"), SUPPORTED, run);
  assert.deepEqual(found, { executable: "/opt/python3.12/bin/python", version: "3.12.4", source: "python3.12 on PATH" });
  assert.deepEqual(tried, [
    "python3 on PATH: Python 3.10.12 (needs 3.11 to 3.14)",
    "python3.14 on PATH: not found",
    "python3.13 on PATH: not found",
  ]);
  assert.deepEqual(calls[0], ["python3", "-c", PROBE]);
});

test("a Python newer than the bundle's wheels does not count", async () => {
  const { run } = machine({ python3: "3.15.0" });
  const { found, tried } = await findPython([{ command: "python3", args: [], source: "python3 on PATH" }], SUPPORTED, run);
  assert.equal(found, undefined);
  assert.deepEqual(tried, ["python3 on PATH: Python 3.15.0 (needs 3.11 to 3.14)"]);
});

test("a Python that fails the probe says why", async () => {
  const broken = { code: 1, stdout: "", stderr: "Traceback ...\nModuleNotFoundError: No module named 'venv'\n" };
  const { run } = machine({ python3: broken });
  const { tried } = await findPython([{ command: "python3", args: [], source: "python3 on PATH" }], SUPPORTED, run);
  assert.deepEqual(tried, ["python3 on PATH: does not run (ModuleNotFoundError: No module named 'venv')"]);
});

test("the versions read as a range", () => {
  assert.equal(describeVersions(SUPPORTED), "3.11 to 3.14");
  assert.equal(describeVersions(["3.12"]), "3.12");
});

test("the real runner reports a program that does not exist, and an exit status", async () => {
  const missing = await runProcess("scopecache-no-such-program", []);
  assert.equal(missing.error?.code, "ENOENT");
  const failed = await runProcess(process.execPath, ["-e", "process.stderr.write('no'); process.exit(3)"]);
  assert.deepEqual([failed.code, failed.stderr, failed.error], [3, "no", undefined]);
});
