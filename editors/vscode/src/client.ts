/**
 * The language client: starts `scopecache serve` over stdio, sends the
 * settings, restarts a dying server with backoff and makes sure accepted
 * inline suggestions reach the server as `scopecache.accepted`.
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
  type ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

import { RestartBackoff } from "./backoff";
import { LANGUAGES } from "./languages";
import { SECTION, type SettingReader, buildServerSettings, serverCommand } from "./settings";
import { ACCEPTED_COMMAND } from "./stats";

export { LANGUAGES };

/** Reads `scopecache.*` from the VS Code configuration. */
export function configurationReader(): SettingReader {
  const config = vscode.workspace.getConfiguration(SECTION);
  return (key) => config.get(key);
}

/** Restarts the server after a crash, waiting longer after each quick crash. */
class BackoffErrorHandler implements ErrorHandler {
  stopping = false;

  constructor(
    private readonly backoff: RestartBackoff,
    private readonly output: vscode.LogOutputChannel,
  ) {}

  error(): ErrorHandlerResult {
    return { action: ErrorAction.Continue };
  }

  async closed(): Promise<CloseHandlerResult> {
    if (this.stopping) {
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    const delay = this.backoff.nextDelay();
    this.output.appendLine(`scopecache server stopped; restarting in ${delay} ms`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    this.backoff.started();
    return { action: CloseAction.Restart, handled: true };
  }
}

/** The running client plus what it needs to be reconfigured, restarted or stopped. */
export class ScopeCacheClient implements vscode.Disposable {
  private current: LanguageClient | undefined;
  private errorHandler: BackoffErrorHandler | undefined;
  private acceptedCommand: vscode.Disposable | undefined;
  private readonly backoff = new RestartBackoff();

  constructor(private readonly output: vscode.LogOutputChannel) {}

  /** The language client of the running server, if any. */
  get client(): LanguageClient | undefined {
    return this.current;
  }

  isRunning(): boolean {
    return this.current?.isRunning() ?? false;
  }

  /** Starts a server with the command configured now. */
  async start(): Promise<void> {
    const { command, args } = serverCommand(configurationReader());
    this.output.appendLine(`starting ${[command, ...args].join(" ")}`);
    const serverOptions: ServerOptions = { command, args, transport: TransportKind.stdio };
    this.errorHandler = new BackoffErrorHandler(this.backoff, this.output);
    const clientOptions: LanguageClientOptions = {
      documentSelector: LANGUAGES.flatMap((language) => [
        { scheme: "file", language },
        { scheme: "untitled", language },
      ]),
      outputChannel: this.output,
      initializationOptions: () => buildServerSettings(configurationReader()),
      errorHandler: this.errorHandler,
      middleware: {
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
    const client = new LanguageClient("scopecache", "scopecache", serverOptions, clientOptions);
    client.onDidChangeState(() => this.ensureAcceptedCommand(client));
    this.current = client;
    this.backoff.started();
    await client.start();
    this.ensureAcceptedCommand(client);
  }

  async stop(): Promise<void> {
    const client = this.current;
    this.current = undefined;
    if (this.errorHandler) {
      this.errorHandler.stopping = true;
    }
    this.acceptedCommand?.dispose();
    this.acceptedCommand = undefined;
    if (client?.isRunning()) {
      await client.stop();
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
      throw new Error("the scopecache server is not running");
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
  }
}
