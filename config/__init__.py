"""The project: settings, URLs, the API and MCP mounting, middleware, health, the embedded
database server and the commands that start the product. It stands above every app and is the
only package that imports them all (docs/architecture.md)."""
