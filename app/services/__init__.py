"""Services: the work behind the API's routes and the MCP tools (retrieval, answers), called by both so neither
repeats the other's logic."""
