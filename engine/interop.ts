/**
 * CommonJS packages whose typings say `export default X` while the module itself *is* X: under
 * NodeNext the default import is the whole module, so unwrap `.default` when present.
 */
export function cjsDefault<T>(mod: { default: T } | T): T {
  return ((mod as { default?: T }).default ?? mod) as T;
}
