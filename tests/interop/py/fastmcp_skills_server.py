"""A FastMCP 4.x server that serves Agent Skills over MCP (the io.modelcontextprotocol/skills
extension, SEP-2640: skills/list, skills/get, resources/directory/read), for the interop
test of Skills merged by Manifold.

Usage: .peers/py-fastmcp/bin/python tests/interop/py/fastmcp_skills_server.py NAME ROOT
ROOT holds one directory per skill (each with a SKILL.md). Listens on 127.0.0.1 (a free
port) over Streamable HTTP and prints one line:
    fastmcp-skills NAME: listening on http://127.0.0.1:<port>/mcp
Tools:
    whoami {}  the server's NAME (which server an app or a skill's call reached)
"""

from __future__ import annotations

import asyncio
import socket
import sys

import uvicorn
from fastmcp import FastMCP
from fastmcp.server.providers.skills.directory_provider import SkillsDirectoryProvider
from fastmcp.skills.extension import SkillsExtension


def build(name: str, root: str) -> FastMCP:
    mcp = FastMCP(f"skills-{name}")
    skills = SkillsDirectoryProvider(roots=[root], experimental_skills=True)
    mcp.add_provider(skills)
    mcp.add_extension(SkillsExtension(providers=[skills]))

    @mcp.tool
    def whoami() -> str:
        return name

    return mcp


def main() -> None:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    name, root = sys.argv[1], sys.argv[2]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = build(name, root).http_app(path="/mcp")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    asyncio.run(serve(server, sock, port, name))


async def serve(server: uvicorn.Server, sock: socket.socket, port: int, name: str) -> None:
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            return
        await asyncio.sleep(0.02)
    print(f"fastmcp-skills {name}: listening on http://127.0.0.1:{port}/mcp", flush=True)
    await task


if __name__ == "__main__":
    sys.exit(main())
