"""Interop driver for the io.modelcontextprotocol/skills extension (SEP-2640): FastMCP's own
client (fastmcp 4.1.4 `Client` with `SkillsClientExtension`, at 2026-07-28) loads every skill
as a host does: `skills/list`, `skills/get` of each, then each listed file read with
`resources/read` and verified against its announced size and SHA-256 digest.

Usage: python tests/interop/py/skills_client.py <url>
Prints one JSON object on stdout:
    {"skills": [{"uri", "frontmatter", "got_same": bool,
                 "files": [{"uri", "verified": bool, "text"}]}], "extension": {...}}
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sys

from fastmcp import Client
from fastmcp.skills.client import SkillsClientExtension


def raw_bytes(content) -> bytes:
    text = getattr(content, "text", None)
    if text is not None:
        return text.encode("utf-8")
    return base64.b64decode(getattr(content, "blob"))


async def main(url: str) -> dict:
    out: dict = {"skills": []}
    async with Client(url, extensions=[SkillsClientExtension()]) as client:
        caps = client.server_capabilities
        ext = (caps.extensions or {}) if caps else {}
        out["extension"] = ext.get("io.modelcontextprotocol/skills")
        for skill in await client.list_skills():
            entry = skill.model_dump(mode="json", by_alias=True, exclude_none=True)
            got = await client.get_skill(skill.uri)
            got_entry = got.model_dump(mode="json", by_alias=True, exclude_none=True)
            files = []
            for res in entry["resources"] if isinstance(entry["resources"], list) else []:
                contents = await client.read_resource(res["uri"])
                data = raw_bytes(contents[0])
                digest = "sha256:" + hashlib.sha256(data).hexdigest()
                files.append({
                    "uri": res["uri"],
                    "verified": digest == res["digest"] and len(data) == res["size"],
                    "text": data.decode("utf-8", "replace"),
                })
            out["skills"].append({
                "uri": entry["uri"],
                "frontmatter": entry["frontmatter"],
                "got_same": got_entry == entry,
                "files": files,
            })
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1])), sort_keys=True))
