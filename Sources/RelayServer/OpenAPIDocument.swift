/// LiveRelay's HTTP API as an OpenAPI 3.1 document, served at `/api/openapi.json`. The document is
/// `openapi.json` beside this file; the EmbedText plugin (Plugins/EmbedText) writes its text into
/// the binary at build time as `OpenAPIDocument.json` (the generated `OpenAPIDocument+Embedded.swift`),
/// so the installed binary needs no file beside it. Kept true by `OpenAPITests` (every route
/// documented, every documented route served, the embedded text the file's) and by
/// `scripts/openapi_check.py`, which calls each operation on a running server and checks the
/// answer against the schema given there.
enum OpenAPIDocument {}
