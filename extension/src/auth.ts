import * as vscode from 'vscode';

/** The server token lives in SecretStorage (the OS keychain), never in settings. */
const TOKEN_KEY = 'dockhand.token';

export class TokenStore {
  private cached: string | undefined;
  private loaded = false;
  readonly onDidChange: vscode.Event<void>;

  constructor(private readonly secrets: vscode.SecretStorage) {
    const emitter = new vscode.EventEmitter<void>();
    this.onDidChange = emitter.event;
    this.changed = emitter;
  }

  private readonly changed: vscode.EventEmitter<void>;

  async get(): Promise<string | undefined> {
    if (!this.loaded) {
      this.cached = await this.secrets.get(TOKEN_KEY);
      this.loaded = true;
    }
    return this.cached;
  }

  async set(token: string): Promise<void> {
    await this.secrets.store(TOKEN_KEY, token);
    this.cached = token;
    this.loaded = true;
    this.changed.fire();
  }

  async clear(): Promise<void> {
    await this.secrets.delete(TOKEN_KEY);
    this.cached = undefined;
    this.loaded = true;
    this.changed.fire();
  }

  /** Another window signed in or out. */
  watch(): vscode.Disposable {
    return this.secrets.onDidChange((event) => {
      if (event.key !== TOKEN_KEY) return;
      this.loaded = false;
      this.changed.fire();
    });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
