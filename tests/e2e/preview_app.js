// The preview app's script (served by preview_app.py at /app.js): what a dev server's page could try against isb
// with the viewer's browser. Results go to window.results for the browser test.
(async () => {
  const params = new URLSearchParams(location.hash.slice(1));
  const port = params.get('isb_port');
  const results = { document_cookie: document.cookie };
  const attempt = async (key, url, init) => {
    try {
      const r = await fetch(url, init);
      results[key] = 'read ' + r.status + ' ' + (await r.text()).slice(0, 200);
    } catch (e) {
      results[key] = 'refused';
    }
  };
  for (const [name, host] of [['ip', '127.0.0.1'], ['localhost', 'localhost']]) {
    const isb = 'http://' + host + ':' + port;
    await attempt(name + '_get', isb + '/api/v1/tools/whoami', { credentials: 'include' });
    await attempt(name + '_post', isb + '/api/v1/tools/whoami', {
      method: 'POST', credentials: 'include',
      headers: { 'Content-Type': 'application/json', 'X-Isb-Csrf': '1' }, body: '{}' });
  }
  const same = await fetch('/api/v1/tools/whoami', { method: 'POST', headers: { 'X-Isb-Csrf': '1' }, body: '{}' });
  const echoed = await same.json();
  results.same_origin_path = echoed.path;
  results.same_origin_cookies = echoed.headers.filter(([n]) => n.toLowerCase() === 'cookie').map(([, v]) => v).join('; ');
  results.done = true;
  window.results = results;
  document.getElementById('origin').textContent = location.origin + ': ' + JSON.stringify(results);
})();
