/** One started part of the process, and how it stops. */
interface Component {
  readonly name: string;
  stop(): void | Promise<void>;
}

/**
 * The components start-up started, in the order it started them. They stop in exactly the
 * reverse order, in one place: on shutdown, and when start-up fails half-way (then only what
 * was started stops). `order` is the one table of them, in start order: a component may be
 * left out (one a flag turns off), but one started after a later row is refused, so the table
 * read top to bottom is the start order and bottom to top the stop order, with no exceptions.
 */
export class StartedComponents<N extends string = string> {
  private readonly started: Component[] = [];
  /** The table row of the component started last (-1: none yet). */
  private lastRow = -1;

  constructor(private readonly order: readonly N[]) {}

  /** Records `component` as started (after whatever was started before it); returns it. */
  add<T>(name: N, component: T, stop: (component: T) => void | Promise<void>): T {
    const row = this.order.indexOf(name);
    if (row <= this.lastRow) throw new Error(`component "${name}" started out of the table's order (after "${this.order[this.lastRow]}")`);
    this.lastRow = row;
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
