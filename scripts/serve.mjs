// A static file server for dist/, for the README's serve command and the browser tests.
// Usage: node scripts/serve.mjs [folder] [--port N]
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * Serves `folder` on 127.0.0.1:`port` (0 picks a free port) under the path `prefix`, with `types`
 * overriding the content types by extension (as a host's misconfigured server might); resolves to
 * {server, url}.
 */
export function serveFolder(folder, port = 0, { prefix = '/', types = {} } = {}) {
  const root = resolve(folder);
  const contentTypes = { ...TYPES, ...types };
  const server = createServer(async (request, response) => {
    try {
      const fullPath = decodeURIComponent(new URL(request.url, 'http://localhost').pathname);
      if (!fullPath.startsWith(prefix)) throw new Error('outside the prefix');
      const path = fullPath.slice(prefix.length - 1);
      let file = normalize(join(root, path));
      if (file !== root && !file.startsWith(root + sep)) throw new Error('outside root');
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file);
      response.writeHead(200, { 'Content-Type': contentTypes[extname(file)] ?? 'application/octet-stream' });
      response.end(body);
    } catch {
      response.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
      response.end('Not found\n');
    }
  });
  return new Promise((resolveListen) => {
    server.listen(port, '127.0.0.1', () => {
      resolveListen({ server, url: `http://localhost:${server.address().port}${prefix}` });
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const portIndex = args.indexOf('--port');
  const port = portIndex >= 0 ? Number(args[portIndex + 1]) : 8000;
  const folder = args.find((arg, index) => !arg.startsWith('--') && index !== portIndex + 1) ?? 'dist';
  const { url } = await serveFolder(folder, port);
  console.log(`Serving ${folder}/ at ${url}  (Ctrl-C to stop)`);
}
