"""Services: what the product does, between the HTTP edge (``app.api``) and the parts (generation, retrieval,
ingestion, the database). Routes parse a request, call one service function and return its result as a pydantic
``response_model``; services never see a ``Request``. Each module is keyword-only functions or a small class."""
