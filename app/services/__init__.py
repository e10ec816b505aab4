"""Services: the logic behind the API routes (database and file work), kept out of the thin route functions."""
