/** One started part of the process, and how it stops. */
interface Component {
  readonly name: string;
  stop(): void | Promise<void>;
}

/**
 * The components start-up started, in the order it started them. They stop in exactly the
 * reverse order, in one place: on shutdown, and when start-up fails half-way (then only what
 * was started stops).
 */
export class StartedComponents {
  private readonly started: Component[] = [];

  /** Records `component` as started (after whatever was started before it); returns it. */
  add<T>(name: string, component: T, stop: (component: T) => void | Promise<void>): T {
    this.started.push({ name, stop: () => stop(component) });
    return component;
  }

  /** The names, in start order. */
  get names(): string[] {
    return this.started.map((c) => c.name);
  }

  /**
   * Stops every component, the last started first. One that fails to stop does not keep the
   * ones started before it running: the first failure is thrown once all had their turn.
   */
  async stopAll(): Promise<void> {
    let failure: { error: unknown } | undefined;
    for (let component = this.started.pop(); component; component = this.started.pop()) {
      try {
        await component.stop();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}
