"""MCP: the Model Context Protocol host: configured servers, contained, their tools as steps."""
