"""The MCP adapter: tools, skill resources, the Skills Extension and prompts.

Owns the server (``server``), the skill files below the tools and the Skills Extension
(``skills``), change notifications (``changes``), its transports (``stdio``, ``http``: Streamable
HTTP with its protections), what the tools say (``replies``) and starting it from a command line
(``launch``).

May use: the facade (``library``), the error tree and plain helpers (``text``, ``net``,
``config``, ``version``). Never ``store`` or a service part, never ``cli`` or ``web``."""
