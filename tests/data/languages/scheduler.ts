// A small task scheduler with priorities, retries and cancellation.
import { EventEmitter } from "events";

export type TaskState = "pending" | "running" | "done" | "failed" | "cancelled";

export interface TaskOptions {
  priority?: number;
  retries?: number;
  timeoutMs?: number;
}

export interface Task<T> {
  id: number;
  name: string;
  priority: number;
  retries: number;
  state: TaskState;
  run: () => Promise<T>;
  result?: T;
  error?: Error;
}

export class TimeoutError extends Error {
  constructor(public readonly taskName: string, public readonly timeoutMs: number) {
    super(`task ${taskName} timed out after ${timeoutMs} ms`);
    this.name = "TimeoutError";
  }
}

function withTimeout<T>(promise: Promise<T>, name: string, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new TimeoutError(name, timeoutMs)), timeoutMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: Error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

export class Scheduler extends EventEmitter {
  private nextId = 1;
  private queue: Task<unknown>[] = [];
  private running = 0;

  constructor(private readonly concurrency: number = 4) {
    super();
    if (concurrency < 1) {
      throw new RangeError("concurrency must be at least 1");
    }
  }

  schedule<T>(name: string, run: () => Promise<T>, options: TaskOptions = {}): Task<T> {
    const task: Task<T> = {
      id: this.nextId++,
      name,
      priority: options.priority ?? 0,
      retries: options.retries ?? 0,
      state: "pending",
      run: options.timeoutMs ? () => withTimeout(run(), name, options.timeoutMs!) : run,
    };
    this.queue.push(task as Task<unknown>);
    this.queue.sort((a, b) => b.priority - a.priority);
    this.emit("scheduled", task);
    this.pump();
    return task;
  }

  cancel(id: number): boolean {
    const index = this.queue.findIndex((task) => task.id === id);
    if (index < 0) {
      return false;
    }
    const [task] = this.queue.splice(index, 1);
    task.state = "cancelled";
    this.emit("cancelled", task);
    return true;
  }

  get pending(): number {
    return this.queue.length;
  }

  private pump(): void {
    while (this.running < this.concurrency && this.queue.length > 0) {
      const task = this.queue.shift()!;
      this.running += 1;
      void this.execute(task).finally(() => {
        this.running -= 1;
        this.pump();
      });
    }
  }

  private async execute(task: Task<unknown>): Promise<void> {
    task.state = "running";
    for (let attempt = 0; attempt <= task.retries; attempt++) {
      try {
        task.result = await task.run();
        task.state = "done";
        this.emit("done", task);
        return;
      } catch (error) {
        task.error = error as Error;
        this.emit("retry", task, attempt);
      }
    }
    task.state = "failed";
    this.emit("failed", task);
  }
}

export function summarize(tasks: Task<unknown>[]): Record<TaskState, number> {
  const counts: Record<TaskState, number> = {
    pending: 0,
    running: 0,
    done: 0,
    failed: 0,
    cancelled: 0,
  };
  for (const task of tasks) {
    counts[task.state] += 1;
  }
  return counts;
}
