// Module hooks for run.mjs: `k6` and `k6/*` resolve to this shim, and the scripts' .js files
// load as ES modules, as k6 reads them (beside no package.json that would say so).
const shim = new URL('./k6/', import.meta.url);
const modules = { k6: 'index.js', 'k6/http': 'http.js', 'k6/metrics': 'metrics.js', 'k6/execution': 'execution.js' };

export async function resolve(specifier, context, next) {
  if (specifier in modules) {
    return { url: new URL(modules[specifier], shim).href, shortCircuit: true };
  }
  if (specifier.startsWith('k6/')) {
    throw new Error(`${specifier}: the k6 shim has no such module (it has ${Object.keys(modules).join(', ')})`);
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url.startsWith('file:') && url.endsWith('.js')) {
    return next(url, { ...context, format: 'module' });
  }
  return next(url, context);
}
