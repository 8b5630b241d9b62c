// Interop driver for the io.modelcontextprotocol/skills extension (SEP-2640): the official
// TypeScript SDK v2 client (@modelcontextprotocol/client, its `SkillsClient`) loads every
// skill as a host does: `skills/list`, `skills/get` of each, then each listed file read
// and verified by the SDK (size, digest, and for SKILL.md the frontmatter against the entry).
//
// Usage: "$MANIFOLD_NODE" tests/interop/ts/skills.mjs <url>
// Prints one JSON object on stdout, in the shape of py/skills_client.py's:
//   {"extension": bool, "skills": [{"uri", "frontmatter", "got_same",
//                                   "files": [{"uri", "verified", "text"}]}]}
// Exits 1 (after printing the error on stderr) when the SDK refuses anything.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const NM = process.env.MANIFOLD_NODE_MODULES;
if (!NM || !process.argv[2]) {
    console.error('usage: MANIFOLD_NODE_MODULES=… skills.mjs <url>');
    process.exit(2);
}
const load = (p) => import(pathToFileURL(path.join(NM, '@modelcontextprotocol/client/dist', p)).href);
const { Client, StreamableHTTPClientTransport } = await load('index.mjs');
const { SkillsClient } = await load('ext/skills/index.mjs');

try {
    const client = new Client({ name: 'manifold-skills-interop', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
    const skills = new SkillsClient(client);
    const out = { extension: skills.supported, skills: [] };
    const { skills: entries } = await skills.list();
    for (const entry of entries) {
        const { skill: got } = await skills.get(entry.uri);
        const files = [];
        for (const res of Array.isArray(entry.resources) ? entry.resources : []) {
            const file = await skills.read(entry, res.uri);
            files.push({ uri: res.uri, verified: file.verified, text: new TextDecoder().decode(file.bytes) });
        }
        out.skills.push({
            uri: entry.uri,
            frontmatter: entry.frontmatter,
            got_same: JSON.stringify(got) === JSON.stringify(entry),
            files,
        });
    }
    await client.close();
    process.stdout.write(JSON.stringify(out) + '\n');
} catch (e) {
    console.error(`skills.mjs: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
}
