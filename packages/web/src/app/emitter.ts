/** A minimal typed event emitter: the logic layer tells the views what changed, views re-render. */
export class Emitter<Events extends Record<string, unknown>> {
  private handlers = new Map<keyof Events, Set<(payload: never) => void>>();

  on<K extends keyof Events>(name: K, fn: (payload: Events[K]) => void): () => void {
    let set = this.handlers.get(name);
    if (!set) {
      set = new Set();
      this.handlers.set(name, set);
    }
    set.add(fn);
    return () => set.delete(fn);
  }

  emit<K extends keyof Events>(name: K, payload: Events[K]): void {
    for (const fn of this.handlers.get(name) ?? []) {
      try {
        (fn as (value: Events[K]) => void)(payload);
      } catch (error) {
        console.error(error);
      }
    }
  }
}
