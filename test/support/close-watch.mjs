// Where a child's `app.close()` is: which lifecycle hooks of which providers have begun and not ended, and what the
// mysql2 pool of its DataSource still has under way (a pool's `end()` waits for the command in flight on each of its
// connections). The soak worker reports it when a close lasts, so that a hung close says where it hangs.

const HOOKS = ['onModuleDestroy', 'beforeApplicationShutdown', 'onApplicationShutdown'];

/**
 * Wraps the shutdown hooks of every provider of `app` (Nest calls them through the instance at close time), and
 * returns a function that describes the close so far: the hooks pending, for how long, and the pool's connections.
 * @param {any} app a Nest application context
 * @param {any} [dataSource] the TypeORM DataSource whose pool to describe
 */
export function watchClose(app, dataSource) {
  /** @type {Map<number, { hook: string, since: number }>} */
  const pending = new Map();
  /** @type {string[]} */
  const ended = [];
  let next = 0;
  const seen = new WeakSet();
  const wrap = (/** @type {any} */ instance) => {
    if (instance === null || typeof instance !== 'object' || seen.has(instance)) return;
    seen.add(instance);
    for (const name of HOOKS) {
      const original = instance[name];
      if (typeof original !== 'function') continue;
      const hook = `${instance.constructor?.name ?? '?'}.${name}`;
      instance[name] = function (/** @type {unknown[]} */ ...args) {
        const id = ++next;
        pending.set(id, { hook, since: Date.now() });
        const done = () => {
          pending.delete(id);
          ended.push(hook);
        };
        try {
          const result = original.apply(this, args);
          if (result && typeof result.then === 'function') result.then(done, done);
          else done();
          return result;
        } catch (error) {
          done();
          throw error;
        }
      };
    }
  };
  const modules = app.container?.getModules?.();
  for (const module of modules?.values() ?? []) {
    for (const wrappers of [module.providers, module.injectables, module.controllers]) {
      for (const wrapper of wrappers?.values() ?? []) wrap(wrapper.instance);
    }
  }
  return () => ({
    pending: [...pending.values()].map(({ hook, since }) => `${hook} (${Date.now() - since} ms)`),
    ended: ended.slice(-8),
    pool: describePool(dataSource?.driver?.pool),
    resources: process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap'),
  });
}

/** The connections of a mysql2 pool (or a pg pool's counts): for each, its command in flight and what is queued. */
function describePool(/** @type {any} */ pool) {
  if (!pool) return undefined;
  if (pool._allConnections) {
    const all = [];
    for (let i = 0; i < pool._allConnections.length; i++) {
      const c = pool._allConnections.get(i);
      all.push({
        id: c.threadId,
        command: c._command ? `${c._command.constructor?.name}${c._command.sql ? `: ${String(c._command.sql).slice(0, 80)}` : ''}` : null,
        queued: (c._commands?.length ?? 0),
        closing: c._closing === true,
        fatal: c._fatalError ? String(c._fatalError.code ?? c._fatalError.message) : null,
        socket: c.stream ? `${c.stream.destroyed ? 'destroyed' : 'open'}${c.stream.readyState ? ` ${c.stream.readyState}` : ''}` : null,
      });
    }
    return { closed: pool._closed === true, free: pool._freeConnections?.length, queue: pool._connectionQueue?.length, all };
  }
  return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, ending: pool.ending };
}
