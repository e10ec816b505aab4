"""Contract tests for index backends. Nothing here is global: fixtures live on the contract classes."""
