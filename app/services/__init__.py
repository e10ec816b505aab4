"""Business logic the API routes call: database work and calls to other services, kept out of the routes."""
