/**
 * Extension entry point: wires the language client, the status bar item, the
 * commands "Show Cache Stats", "Clear Cache" and "Restart Server", and the
 * word and line accepts of suggestions (reported to the server).
 */
import * as vscode from "vscode";

import { BundledServer } from "./bundledServer";
import { ScopeCacheClient, configurationReader } from "./client";
import { registerPartialAccepts } from "./partialAccepts";
import { RESTART_KEYS, SECTION } from "./settings";
import {
  ACCEPTED_COMMAND,
  CLEAR_CACHE_METHOD,
  STATS_METHOD,
  type ServerStats,
  formatStatsReport,
  upstreamState,
} from "./stats";
import { StatsStatusBar } from "./statusBar";

let scopecache: ScopeCacheClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("scopecache", { log: true });
  const bundled = new BundledServer(context, output);
  const running = new ScopeCacheClient(output, () => bundled.command());
  scopecache = running;

  const fetchStats = async (): Promise<ServerStats> => {
    return running.request<ServerStats>(STATS_METHOD);
  };
  const statusBar = new StatsStatusBar(
    fetchStats,
    () => {
      const seconds = configurationReader()("server.statusPollSeconds");
      return (typeof seconds === "number" ? seconds : 5) * 1000;
    },
    () => running.state,
  );

  context.subscriptions.push(
    output,
    running,
    statusBar,
    running.onDidChangeState(() => void statusBar.refresh()),
    registerPartialAccepts(running.shown, (args) =>
      running.isRunning()
        ? running.request("workspace/executeCommand", { command: ACCEPTED_COMMAND, arguments: args })
        : undefined,
    ),
    vscode.commands.registerCommand("scopecache.showStats", async () => {
      try {
        const stats = await fetchStats();
        output.appendLine(formatStatsReport(stats, upstreamState(stats)));
        output.show(true);
      } catch (error) {
        void vscode.window.showErrorMessage(`scopecache: ${String(error)}`);
      }
    }),
    vscode.commands.registerCommand("scopecache.clearCache", async () => {
      try {
        const result = await running.request<{ cleared: number }>(CLEAR_CACHE_METHOD);
        void vscode.window.showInformationMessage(`scopecache: cleared ${result.cleared} cache entries`);
      } catch (error) {
        void vscode.window.showErrorMessage(`scopecache: ${String(error)}`);
      }
      await statusBar.refresh();
    }),
    vscode.commands.registerCommand("scopecache.restartServer", async () => {
      await running.restart();
      await statusBar.refresh();
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!event.affectsConfiguration(SECTION)) {
        return;
      }
      const restart = RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`));
      if (restart) {
        await running.restart();
        return;
      }
      await running.sendSettings();
      if (event.affectsConfiguration(`${SECTION}.server.statusPollSeconds`)) {
        statusBar.restartPolling(); // a running interval keeps its old period otherwise
      } else {
        statusBar.update();
      }
    }),
  );
  await running.start();
}

export async function deactivate(): Promise<void> {
  await scopecache?.stop();
}
