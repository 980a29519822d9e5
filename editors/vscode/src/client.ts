/**
 * The language client: starts `scopecache serve` over stdio, sends the
 * settings, restarts a dying server with backoff and makes sure accepted
 * inline suggestions reach the server as `scopecache.accepted`.
 *
 * Without `scopecache.server.command` the command comes from the server
 * the package bundles (bundledServer.ts), installed on the first start.
 *
 * Restarts are ours, not the library's: its own restart reuses the client
 * (and so the command it was built with) after a delay nothing can cancel,
 * so a settings change during the delay would be followed by a stale start.
 * Here one timer per crash builds a new client from the current settings,
 * and stopping or starting cancels a pending one.
 */
import * as vscode from "vscode";
import {
  type CancellationToken,
  CloseAction,
  type CloseHandlerResult,
  type ConfigurationParams,
  ConfigurationRequest,
  DidChangeConfigurationNotification,
  ErrorAction,
  type ErrorHandler,
  type ErrorHandlerResult,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type ShutdownMode,
  State,
} from "vscode-languageclient/node";

import { RestartBackoff } from "./backoff";
import { LANGUAGES } from "./languages";
import { ShownSuggestions } from "./partialAccepts";
import { ServerLogReader } from "./serverLog";
import { ServerSetupError } from "./serverInstall";
import { SECTION, type SettingReader, buildServerSettings, configuredCommand, serverOptions } from "./settings";
import { ACCEPTED_COMMAND, type ServerState } from "./stats";

export { LANGUAGES };

/** Reads `scopecache.*` from the VS Code configuration. */
export function configurationReader(): SettingReader {
  const config = vscode.workspace.getConfiguration(SECTION);
  return (key) => config.get(key);
}

/**
 * A failed start leaves vscode-languageclient in "starting"; it then calls
 * stop(), whose shutdown rejects ("Client is not running and can't be
 * stopped") and is logged as an error. The Node client still ends the
 * server process in its own shutdown; only that misleading rejection of a
 * client that never ran is dropped here.
 */
class ScopeCacheLanguageClient extends LanguageClient {
  /**
   * A failed start pops up once per run of failures (ScopeCacheClient does
   * it); the library would pop one up per attempt, every few seconds.
   */
  override error(message: string, data?: unknown, showNotification: boolean | "force" = true): void {
    const failedStart = message.endsWith("couldn't create connection to server.");
    super.error(message, data, failedStart ? false : showNotification);
  }

  protected override async shutdown(mode: ShutdownMode, timeout?: number): Promise<void> {
    const wasRunning = this.isRunning();
    try {
      await super.shutdown(mode, timeout);
    } catch (error) {
      if (wasRunning) {
        throw error;
      }
    }
  }
}

/** Tells the library never to restart by itself; reports each close to `closed`. */
class CrashHandler implements ErrorHandler {
  constructor(private readonly onClosed: () => number | undefined) {}

  error(): ErrorHandlerResult {
    // A write to a server that just died: logged; closed() decides what follows.
    return { action: ErrorAction.Continue, handled: true };
  }

  closed(): CloseHandlerResult {
    const delay = this.onClosed();
    const message =
      delay === undefined
        ? "scopecache server stopped"
        : `scopecache server stopped; restarting in ${delay} ms`;
    return { action: CloseAction.DoNotRestart, handled: true, message };
  }
}

/** The running client plus what it needs to be reconfigured, restarted or stopped. */
export class ScopeCacheClient implements vscode.Disposable {
  private current: LanguageClient | undefined;
  private acceptedCommand: vscode.Disposable | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private serverState: ServerState = "stopped";
  private failureShown = false;
  /** counts start() and stop() calls: a start that awaited an install checks it is still the newest */
  private generation = 0;
  private readonly stateChanged = new vscode.EventEmitter<ServerState>();
  private readonly backoff = new RestartBackoff();

  /** Fires when the server starts, runs, stops or waits to restart. */
  readonly onDidChangeState = this.stateChanged.event;

  /** The inline suggestions the server sent lately (for word and line accepts). */
  readonly shown = new ShownSuggestions();

  /**
   * `bundledCommand` gives the server's argv when `scopecache.server.command`
   * is not set; it may install the bundled server first, and rejects with a
   * ServerSetupError the user is shown.
   */
  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly bundledCommand: () => Promise<string[]>,
  ) {}

  /** The language client of the running server, if any. */
  get client(): LanguageClient | undefined {
    return this.current;
  }

  /** Where the server is in its life: starting, running, restarting or stopped. */
  get state(): ServerState {
    return this.serverState;
  }

  isRunning(): boolean {
    return this.current?.isRunning() ?? false;
  }

  private setState(state: ServerState): void {
    if (state === "running") {
      this.failureShown = false; // a new run of failures gets its own message
    }
    if (state !== this.serverState) {
      this.serverState = state;
      this.stateChanged.fire(state);
    }
  }

  /** Starts a server with the command configured now; a failed start is logged, not thrown. */
  async start(): Promise<void> {
    this.cancelPendingRestart();
    const generation = ++this.generation;
    const read = configurationReader();
    let automatic: string[] | undefined;
    if (configuredCommand(read) === undefined) {
      this.setState("starting");
      try {
        automatic = await this.bundledCommand();
      } catch (error) {
        if (generation === this.generation) {
          this.failedSetup(error);
        }
        return;
      }
      if (generation !== this.generation) {
        return; // stopped or started again meanwhile
      }
    }
    const previous = this.current;
    const options = serverOptions(read, automatic);
    this.output.info(`starting ${[options.command, ...(options.args ?? [])].join(" ")}`);
    let client: LanguageClient | undefined = undefined;
    const clientOptions: LanguageClientOptions = {
      documentSelector: LANGUAGES.flatMap((language) => [
        { scheme: "file", language },
        { scheme: "untitled", language },
      ]),
      outputChannel: this.output,
      stdioOptions: {
        stdout: (input, channel) => forwardLines(input, (line) => channel.info(line)),
        stderr: (input, channel) => {
          const reader = new ServerLogReader();
          forwardLines(input, (line) => {
            const { level, text } = reader.read(line);
            channel[level](text);
          });
        },
      },
      initializationOptions: () => buildServerSettings(configurationReader()),
      // Without this handler the library shows a pop-up per failed start;
      // start() below tells the user once.
      initializationFailedHandler: () => false,
      errorHandler: new CrashHandler(() => (client ? this.crashed(client) : undefined)),
      middleware: {
        provideInlineCompletionItems: async (document, position, context, token, next) => {
          const result = await next(document, position, context, token);
          this.shown.remember(document, position, result);
          return result;
        },
        workspace: {
          // Answer pull-style configuration requests with the same mapped object.
          configuration: (params: ConfigurationParams, token: CancellationToken, next: ConfigurationRequest.HandlerSignature) => {
            if (params.items.every((item) => item.section === SECTION)) {
              return params.items.map(() => buildServerSettings(configurationReader()));
            }
            return next(params, token);
          },
        },
      },
    };
    const created = new ScopeCacheLanguageClient("scopecache", "scopecache", options, clientOptions);
    client = created;
    created.onDidChangeState((event) => {
      if (created === this.current && event.newState === State.Running) {
        this.setState("running");
        this.ensureAcceptedCommand(created);
      }
    });
    this.current = created;
    if (previous && previous !== created) {
      void previous.dispose().catch(() => undefined); // a crashed client: nothing left to stop
    }
    this.setState("starting");
    this.backoff.started();
    try {
      await created.start();
    } catch (error) {
      // The client has logged why. A crash during start-up has scheduled a restart.
      if (created === this.current) {
        this.failedStart(options.command, error);
        if (this.restartTimer === undefined) {
          this.setState("stopped");
        }
      }
      return;
    }
    if (created === this.current) {
      this.setState("running");
      this.ensureAcceptedCommand(created);
    }
  }

  /** The bundled server could not be set up: said once per run of failures; no restart loop. */
  private failedSetup(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.output.error(`setting up the bundled server: ${message}`);
    if (!this.failureShown) {
      this.failureShown = true;
      const hint = error instanceof ServerSetupError ? "" : " The scopecache output channel has the details.";
      void vscode.window.showErrorMessage(`scopecache: ${message}${hint}`);
    }
    this.setState("stopped");
  }

  /** A start that failed (no process, or no initialize): one message per run of failures. */
  private failedStart(command: string, error: unknown): void {
    const reason = error instanceof Error ? error.message : String(error);
    if (!this.failureShown) {
      this.failureShown = true;
      void vscode.window.showErrorMessage(
        `scopecache: the server (${command}) did not start: ${reason}. ` +
          "Check scopecache.server.command; the scopecache output channel has the details.",
      );
    }
  }

  /** The server of `client` exited by itself: plans one restart; returns its delay. */
  private crashed(client: LanguageClient): number | undefined {
    if (client !== this.current || this.restartTimer !== undefined) {
      return undefined; // stopped on purpose, or replaced already
    }
    this.acceptedCommand?.dispose();
    this.acceptedCommand = undefined;
    const delay = this.backoff.nextDelay();
    this.setState("restarting");
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (client === this.current) {
        void this.start();
      }
    }, delay);
    return delay;
  }

  private cancelPendingRestart(): void {
    if (this.restartTimer !== undefined) {
      clearTimeout(this.restartTimer);
      this.restartTimer = undefined;
      this.output.info("pending restart of the stopped server cancelled");
    }
  }

  async stop(): Promise<void> {
    this.cancelPendingRestart();
    this.generation += 1; // a start still waiting for an install gives up
    const client = this.current;
    this.current = undefined;
    this.acceptedCommand?.dispose();
    this.acceptedCommand = undefined;
    this.setState("stopped");
    if (client) {
      try {
        await client.stop();
      } catch (error) {
        this.output.warn(`stopping the scopecache server: ${String(error)}`);
      }
    }
  }

  /** Stops the server and starts a new one (picking up a changed command). */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Sends a request to the running server. */
  async request<R>(method: string, params: object = {}): Promise<R> {
    const client = this.current;
    if (!client?.isRunning()) {
      throw new Error(`the scopecache server is ${this.serverState === "stopped" ? "not running" : this.serverState}`);
    }
    return client.sendRequest<R>(method, params);
  }

  /** Sends the current settings (after the user changed them). */
  async sendSettings(): Promise<void> {
    if (this.current?.isRunning()) {
      await this.current.sendNotification(DidChangeConfigurationNotification.type, {
        settings: { [SECTION]: buildServerSettings(configurationReader()) },
      });
    }
  }

  /**
   * VS Code runs an accepted item's command locally. When the server lists
   * `scopecache.accepted` as an executeCommand capability the client library
   * registers a forwarding command itself; otherwise we register one here.
   */
  private ensureAcceptedCommand(client: LanguageClient): void {
    if (this.acceptedCommand || !client.isRunning() || client !== this.current) {
      return;
    }
    const provider = client.initializeResult?.capabilities.executeCommandProvider;
    if (provider?.commands.includes(ACCEPTED_COMMAND)) {
      return;
    }
    this.acceptedCommand = vscode.commands.registerCommand(ACCEPTED_COMMAND, (...args: unknown[]) =>
      this.current?.sendRequest(ExecuteCommandRequest.type, { command: ACCEPTED_COMMAND, arguments: args }),
    );
  }

  dispose(): void {
    void this.stop();
    this.stateChanged.dispose();
  }
}

/** Calls `each` with every line of `input`, without the line break. */
function forwardLines(input: NodeJS.ReadableStream, each: (line: string) => void): void {
  let pending = "";
  input.setEncoding("utf8");
  input.on("data", (chunk: string) => {
    const lines = (pending + chunk).split(/\r?\n/);
    pending = lines.pop() ?? "";
    lines.forEach(each);
  });
  input.on("end", () => {
    if (pending) {
      each(pending);
    }
  });
}
