// The console end to end in a real browser: Debian's chromium, headless, driven by
// playwright-core (pinned in tests/console/package.json, installed by scripts/peers).
// Run by tests/tests/console.rs against a running `manifold serve` with both demo
// upstreams, [auth] API keys, a [[policy]] that hides demo2's tools from group:ops,
// an [audit] file, an [integrity] store holding one changed tool, and an admin token.
//
// Steps: a wrong token is refused; log in; both demo upstreams ready; live values
// refresh and pause while the tab is hidden; search the catalogue; open a tool; view
// as the restricted caller; make a call through the gateway and find its audit
// record; approve the held tool (and find that approval in the audit log); reload;
// a cross-site (and a same-site, other-origin) POST is refused; log out.
//
// Environment: CONSOLE_URL (http://127.0.0.1:PORT of the admin listener), MCP_URL,
// ADMIN_TOKEN, CLIENT_KEY (an MCP API key of group ci), RESTRICTED (group:ops),
// CHROMIUM (/usr/bin/chromium), CONSOLE_NODE_MODULES (with playwright-core);
// SCREENSHOTS: a folder to write one PNG per page into (optional).
// Prints one line per step; exits 0 when every step passed, 1 at the first failure.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const env = (k) => {
    const v = process.env[k];
    if (!v) {
        console.error(`console.mjs: ${k} is not set`);
        process.exit(2);
    }
    return v;
};
const CONSOLE = env('CONSOLE_URL');
const MCP = env('MCP_URL');
const ADMIN_TOKEN = env('ADMIN_TOKEN');
const CLIENT_KEY = env('CLIENT_KEY');
const RESTRICTED = env('RESTRICTED');
const CHROMIUM = env('CHROMIUM');
const NM = env('CONSOLE_NODE_MODULES');
const SHOTS = process.env.SCREENSHOTS || '';
const STEP_TIMEOUT = 15000;

const { chromium } = await import(pathToFileURL(path.join(NM, 'playwright-core', 'index.mjs')).href);

let failed = false;
async function step(name, fn) {
    if (failed) return;
    const t = Date.now();
    try {
        await fn();
        console.log(`ok   ${name} (${Date.now() - t} ms)`);
    } catch (e) {
        failed = true;
        console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
    }
}
function check(cond, what) {
    if (!cond) throw new Error(what);
}
async function shot(page, name) {
    if (!SHOTS) return;
    fs.mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}
async function reloadsTotal() {
    const text = await (await fetch(`${CONSOLE}/metrics`)).text();
    return text
        .split('\n')
        .filter((l) => l.startsWith('manifold_config_reloads_total'))
        .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'manifold-console-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
    ],
});
context.setDefaultTimeout(STEP_TIMEOUT);
const page = context.pages()[0] || (await context.newPage());
page.on('dialog', (d) => d.accept());
const marker = `console-e2e-${process.pid}-${Date.now()}`;

// An attacker's pages: a form that posts to the console's reload as soon as it loads.
const attacker = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><form method="post" action="${CONSOLE}/ui/reload">
<input type="hidden" name="csrf" value="0123456789abcdef"></form>
<script>document.forms[0].submit()</script>`);
});
await new Promise((r) => attacker.listen(0, '127.0.0.1', r));
const attackerPort = attacker.address().port;

try {
    await step('a page without credentials leads to the login form', async () => {
        await page.goto(`${CONSOLE}/ui/audit`);
        check(new URL(page.url()).pathname === '/ui/login', `at ${page.url()}`);
        await shot(page, 'login');
    });

    await step('a wrong token is refused', async () => {
        await page.fill('#token', 'not-the-admin-token');
        const [resp] = await Promise.all([
            page.waitForResponse((r) => r.url().endsWith('/ui/login') && r.request().method() === 'POST'),
            page.click('button[type=submit]'),
        ]);
        check(resp.status() === 401, `status ${resp.status()}`);
        const err = await page.textContent('.error');
        check(/not an admin credential/.test(err), `error text: ${err}`);
        const cookies = await context.cookies(`${CONSOLE}/ui`);
        check(!cookies.some((c) => c.name === 'manifold_console'), 'a cookie was set');
    });

    await step('log in, and land on the page asked for', async () => {
        await page.fill('#token', ADMIN_TOKEN);
        await Promise.all([page.waitForURL('**/ui/audit'), page.click('button[type=submit]')]);
        const cookie = (await context.cookies(`${CONSOLE}/ui`)).find((c) => c.name === 'manifold_console');
        check(cookie, 'no session cookie');
        check(cookie.httpOnly && cookie.sameSite === 'Strict', `cookie flags ${JSON.stringify(cookie)}`);
    });

    await step('the overview shows both demo upstreams ready', async () => {
        await page.click('nav >> text=Overview');
        for (const name of ['demo', 'demo2']) {
            const badge = await page.textContent(`#upstream-${name} .badge`);
            check(badge.trim() === 'ready', `${name}: ${badge}`);
        }
        const who = await page.textContent('.who .principal');
        check(who.includes('admin_token:ops'), `principal ${who}`);
        await shot(page, 'overview');
    });

    await step('live values refresh, and pause while the tab is hidden', async () => {
        await page.waitForFunction(
            () => /updated/.test(document.getElementById('live-status').textContent),
            null,
            { timeout: 12000 },
        );
        await page.evaluate(() => {
            Object.defineProperty(document, 'hidden', { value: true, configurable: true });
            document.dispatchEvent(new Event('visibilitychange'));
        });
        const paused = await page.textContent('#live-status');
        check(/paused/.test(paused), `status ${paused}`);
        await page.evaluate(() => {
            Object.defineProperty(document, 'hidden', { value: false, configurable: true });
            document.dispatchEvent(new Event('visibilitychange'));
        });
    });

    await step('search the catalogue (the "/" key focuses the search)', async () => {
        await Promise.all([page.waitForURL('**/ui/catalogue'), page.click('nav >> text=Catalogue')]);
        await page.waitForLoadState('load');
        await page.keyboard.press('/');
        const focused = await page.evaluate(() => document.activeElement.name);
        check(focused === 'q', `focused ${focused}`);
        await page.keyboard.type('echo');
        await Promise.all([page.waitForURL('**/ui/catalogue?**'), page.keyboard.press('Enter')]);
        const names = await page.$$eval('#k-tool + * tbody th', (ths) => ths.map((t) => t.textContent.trim()));
        check(names.includes('demo__echo') && names.includes('demo2__echo'), `tools ${names}`);
        check(!names.includes('demo__add'), `search did not narrow: ${names}`);
        await shot(page, 'catalogue');
    });

    await step('open a tool', async () => {
        await Promise.all([page.waitForURL('**/ui/catalogue/tool/demo__echo'), page.click('text=demo__echo')]);
        const schema = await page.textContent('details[open] pre.json');
        check(/"text"/.test(schema), 'no input schema shown');
        const pin = await page.textContent('#pin-h + *');
        check(/differs from the pin/.test(pin), `pin: ${pin}`);
        await shot(page, 'tool');
    });

    await step(`view the catalogue as ${RESTRICTED}`, async () => {
        await page.goto(`${CONSOLE}/ui/catalogue`);
        await page.fill('input[name=as]', RESTRICTED);
        await Promise.all([page.waitForURL('**/ui/catalogue?**'), page.click('form.filters button')]);
        const visible = await page.$$eval('#k-tool + * tbody th', (ths) => ths.map((t) => t.textContent.trim()));
        check(visible.includes('demo__echo') && !visible.some((n) => n.startsWith('demo2__')), `visible ${visible}`);
        const hidden = await page.textContent('#hidden-h + *');
        check(/demo2__echo/.test(hidden), 'demo2__echo not listed as hidden');
        await shot(page, 'view-as');
    });

    await step('a call through the gateway shows up in the audit view', async () => {
        const res = await fetch(MCP, {
            method: 'POST',
            headers: {
                authorization: `Bearer ${CLIENT_KEY}`,
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                'mcp-protocol-version': '2026-07-28',
                'mcp-method': 'tools/call',
                'mcp-name': 'demo__echo',
            },
            body: JSON.stringify({
                jsonrpc: '2.0',
                id: 1,
                method: 'tools/call',
                params: {
                    name: 'demo__echo',
                    arguments: { text: marker },
                    _meta: {
                        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                        'io.modelcontextprotocol/clientInfo': { name: 'console-e2e', version: '1' },
                        'io.modelcontextprotocol/clientCapabilities': {},
                    },
                },
            }),
        });
        const body = await res.text();
        check(res.status === 200 && body.includes(marker), `call: ${res.status} ${body}`);
        await page.goto(`${CONSOLE}/ui/audit`);
        await page.fill('input[name=tool]', 'demo__echo');
        await page.fill('input[name=principal]', 'key:ci');
        await Promise.all([page.waitForURL('**/ui/audit?**'), page.click('form.filters button')]);
        const first = page.locator('ol.records > li details').first();
        await first.locator('summary').click();
        const text = await first.textContent();
        check(text.includes(marker), `newest record: ${text.slice(0, 400)}`);
        await page.waitForFunction(() => /intact/.test(document.getElementById('chain').textContent), null, {
            timeout: 12000,
        });
        await shot(page, 'audit');
    });

    await step('approve the held tool; the approval is audited', async () => {
        await page.click('nav >> text=Pins');
        const held = await page.textContent('#pending');
        check(/echo/.test(held) && /changed/.test(held), `pending: ${held.slice(0, 300)}`);
        await shot(page, 'pins');
        await Promise.all([page.waitForURL('**/ui/pins?done=approved'), page.click('#pending button.primary')]);
        const after = await page.textContent('#pending');
        check(/Nothing is held/.test(after), `still pending: ${after.slice(0, 200)}`);
        await page.goto(`${CONSOLE}/ui/audit?method=pins%2Fapprove`);
        const rec = await page.textContent('ol.records');
        check(/admin_token:ops/.test(rec), `approval record: ${rec.slice(0, 300)}`);
    });

    await step('reload the configuration', async () => {
        const before = await reloadsTotal();
        await page.click('nav >> text=Configuration');
        await Promise.all([page.waitForURL('**/ui/config?reloaded=ok'), page.click('#reload button.primary')]);
        const text = await page.textContent('#reload');
        check(/Reloaded/.test(text) && /applied/.test(text), `reload: ${text}`);
        check((await reloadsTotal()) === before + 1, 'the reload was not counted');
        await shot(page, 'config');
    });

    await step('a POST from another origin on the same host is refused', async () => {
        const before = await reloadsTotal();
        const [resp] = await Promise.all([
            page.waitForResponse((r) => r.url().endsWith('/ui/reload')),
            page.goto(`http://127.0.0.1:${attackerPort}/`),
        ]);
        check(resp.status() === 403, `status ${resp.status()}`);
        await page.waitForLoadState();
        check((await reloadsTotal()) === before, 'the attacker reloaded the configuration');
    });

    await step('a cross-site POST is refused', async () => {
        const before = await reloadsTotal();
        const [resp] = await Promise.all([
            page.waitForResponse((r) => r.url().endsWith('/ui/reload')),
            page.goto(`http://localhost:${attackerPort}/`),
        ]);
        check(resp.status() === 401 || resp.status() === 403, `status ${resp.status()}`);
        await page.waitForLoadState();
        check((await reloadsTotal()) === before, 'the attacker reloaded the configuration');
    });

    await step('log out: the session is over', async () => {
        await page.goto(`${CONSOLE}/ui`);
        await Promise.all([page.waitForURL('**/ui/login?out=1'), page.click('.who button')]);
        const cookie = (await context.cookies(`${CONSOLE}/ui`)).find((c) => c.name === 'manifold_console');
        check(!cookie, 'the cookie is still there');
        await page.goto(`${CONSOLE}/ui`);
        check(new URL(page.url()).pathname === '/ui/login', `at ${page.url()}`);
    });
} finally {
    await context.close();
    attacker.close();
    fs.rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
