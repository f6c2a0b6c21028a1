"""The knowledge service: one long-running index over HTTP and MCP.

``create_app`` builds the ASGI app (FastAPI: ``/v1/...`` endpoints, ``/metrics``,
MCP over streamable HTTP at ``/mcp``); ``ServedIndex`` holds the knowledge base being
served and swaps in each new generation a build lands; ``KeyStore`` maps API keys
(stored as hashes) to principals. Needs the ``serve`` extra (fastapi, uvicorn, mcp);
names are imported on first use, so the command line starts without them.
"""

from __future__ import annotations

from arborgraph.core.lazy import lazy_exports

_WHERE = {
    "KeyRecord": "arborgraph.service.keys",
    "KeyStore": "arborgraph.service.keys",
    "KeyStoreError": "arborgraph.service.keys",
    "ServedIndex": "arborgraph.service.swap",
    "ServeSettings": "arborgraph.service.limits",
    "Authenticator": "arborgraph.service.auth",
    "create_app": "arborgraph.service.app",
    "build_mcp": "arborgraph.service.mcp_server",
}

__all__ = sorted(_WHERE)


__getattr__ = lazy_exports(__name__, _WHERE, globals())
