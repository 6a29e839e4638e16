"""Statement handlers: each family of statements (accounts, DDL, SHOW, SET, SELECT, ADMIN) turned into journal operations or results, and the registry of statement kinds."""
