"""The index on disk: generations and their store, the manifest, the layout of files, the tables and the access scopes."""
